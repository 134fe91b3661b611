/**
 * ringlab's values as Ansible must read them: as data. Ansible renders `{{ }}` and `{% %}` in any variable's
 * value when it is used, on the controller and as the user running ringlab, so a campaign's text or a CLI
 * argument could run commands (`{{ lookup('pipe', ...) }}`). Ansible never templates a value tagged `!unsafe`,
 * and such a value still works everywhere else, connection settings (ansible_host, ansible_user, ...) included.
 * Pure: text in, text out; the inventory and the extra-vars file are both written with it.
 */
import { defineScalarTag, dump, DUMP_SCHEMA } from "js-yaml";

/** A string written with Ansible's `!unsafe` tag. */
class UnsafeText {
  constructor(readonly text: string) {}
}

const unsafeTag = defineScalarTag<UnsafeText>("!unsafe", {
  resolve: (source) => new UnsafeText(source),
  identify: (data) => data instanceof UnsafeText,
  represent: (data: UnsafeText) => data.text,
});

const ANSIBLE_DATA_SCHEMA = DUMP_SCHEMA.withTags(unsafeTag);

/** Every string in a value, however deeply nested in lists and mappings, marked as never to be templated. */
function markStringsUnsafe(value: unknown): unknown {
  if (typeof value === "string") return new UnsafeText(value);
  if (Array.isArray(value)) return value.map(markStringsUnsafe);
  if (typeof value === "object" && value !== null) {
    // Keys stay plain: they are variable names, which Ansible does not template.
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, markStringsUnsafe(item)]));
  }
  return value;
}

/** YAML for Ansible (an inventory, an extra-vars file) in which every string value is `!unsafe`. */
export function dumpAnsibleData(value: unknown): string {
  return dump(markStringsUnsafe(value), { schema: ANSIBLE_DATA_SCHEMA, lineWidth: -1 });
}
