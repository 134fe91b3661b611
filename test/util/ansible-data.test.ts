import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { dumpAnsibleData } from "../../src/util/ansible-data.ts";

const TRICKY = [
  "",
  " leading",
  "trailing ",
  "123",
  "0x1F",
  "1e3",
  "true",
  "no",
  "null",
  "~",
  "a: b",
  "- x",
  "#c",
  "*alias",
  "&anchor",
  "!tag",
  "@at",
  "`tick",
  "%pct",
  'it\'s "quoted"',
  "multi\nline\n",
  "tab\there",
  "bell\u0007",
  "é ü 漢",
  "{% if true %}x{% endif %}",
  "{{ lookup('pipe', 'id') }}",
  "a,b=c",
  "/shared dir/x",
];

describe("dumpAnsibleData", () => {
  it("writes every string so that Ansible's own loader reads it back unchanged and as unsafe, other values as they are", () => {
    const vars = { texts: TRICKY, nested: { list: [{ deep: "{{ x }}" }], count: 3, flag: false, ratio: 0.5 } };
    const file = join(mkdtempSync(join(tmpdir(), "ringlab-data-")), "inventory.yml");
    writeFileSync(file, dumpAnsibleData({ all: { hosts: { h: vars } } }));
    const listed = JSON.parse(
      execFileSync("ansible-inventory", ["-i", file, "--list"], {
        encoding: "utf8",
        env: { ...process.env, ANSIBLE_NOCOLOR: "1" },
      }),
    );
    const host = listed._meta.hostvars.h;
    expect(host.texts).toEqual(TRICKY.map((text) => ({ __ansible_unsafe: text })));
    expect(host.nested).toEqual({
      list: [{ deep: { __ansible_unsafe: "{{ x }}" } }],
      count: 3,
      flag: false,
      ratio: 0.5,
    });
  });
});
