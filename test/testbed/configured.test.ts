import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configurationFingerprint, readPlaybookFiles, type ConfigurationInputs } from "../../src/testbed/configured.ts";

const INPUTS: ConfigurationInputs = {
  playbookFiles: [
    ["site.yml", "- hosts: all\n"],
    ["roles/common/tasks/main.yml", "- name: a task\n"],
  ],
  inventory: "all:\n  children: {}\n",
  workerImageId: "sha256:1111",
};

describe("the configuration fingerprint a campaign compares before skipping configure", () => {
  it("is the same for the same inputs, whatever order the files were listed in", () => {
    const reversed = { ...INPUTS, playbookFiles: [...INPUTS.playbookFiles].reverse() };
    expect(configurationFingerprint(reversed)).toBe(configurationFingerprint(INPUTS));
    expect(configurationFingerprint(INPUTS)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("changes with an edited or added role file, the inventory and another worker image", () => {
    const base = configurationFingerprint(INPUTS);
    const variants: ConfigurationInputs[] = [
      {
        ...INPUTS,
        playbookFiles: [INPUTS.playbookFiles[0]!, ["roles/common/tasks/main.yml", "- name: another task\n"]],
      },
      { ...INPUTS, playbookFiles: [...INPUTS.playbookFiles, ["roles/common/defaults/main.yml", ""]] },
      // The same bytes split differently between two files is another set of files.
      {
        ...INPUTS,
        playbookFiles: [
          ["site.yml", "- hosts: all\n- name: a task\n"],
          ["roles/common/tasks/main.yml", ""],
        ],
      },
      { ...INPUTS, inventory: "all:\n  children: {workers: {}}\n" },
      { ...INPUTS, workerImageId: "sha256:2222" },
    ];
    const fingerprints = variants.map(configurationFingerprint);
    expect(new Set([base, ...fingerprints]).size).toBe(variants.length + 1);
  });

  it("reads every file of the playbook folder, what tools leave there (bytecode, hidden folders and files) left out", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-playbooks-"));
    mkdirSync(join(dir, "roles", "x", "tasks"), { recursive: true });
    mkdirSync(join(dir, "action_plugins", "__pycache__"), { recursive: true });
    writeFileSync(join(dir, "site.yml"), "- hosts: all\n");
    writeFileSync(join(dir, "roles", "x", "tasks", "main.yml"), "[]\n");
    writeFileSync(join(dir, "action_plugins", "plugin.py"), "x = 1\n");
    writeFileSync(join(dir, "action_plugins", "__pycache__", "plugin.cpython-311.pyc"), "bytecode");
    mkdirSync(join(dir, ".ringlab", "ansible-facts"), { recursive: true });
    writeFileSync(join(dir, ".ringlab", "ansible-facts", "node-0"), "{}");
    writeFileSync(join(dir, "roles", "x", "tasks", ".main.yml.swp"), "editor");
    expect(
      readPlaybookFiles(dir)
        .map(([path, content]) => [path, content.toString()])
        .sort(),
    ).toEqual([
      ["action_plugins/plugin.py", "x = 1\n"],
      ["roles/x/tasks/main.yml", "[]\n"],
      ["site.yml", "- hosts: all\n"],
    ]);
  });
});
