import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { Ansible, describeFailures, parseRecap, totalChanged } from "../../src/adapters/ansible.ts";
import { PrerequisiteError, ToolError } from "../../src/util/errors.ts";
import { buildInventory, renderInventory } from "../../src/testbed/inventory.ts";

const ansibleDir = resolve("ansible");

const OUTPUT = `
TASK [preflight : Check that the required inventory variables are set] *********
fatal: [t-node-0]: FAILED! => {"changed": false, "msg": "Missing inventory variable ringlab_shared_dir"}
fatal: [t-node-1]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: timed out", "unreachable": true}

PLAY RECAP *********************************************************************
t-node-0                   : ok=1    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0
t-node-1                   : ok=4    changed=2    unreachable=1    failed=0    skipped=3    rescued=0    ignored=0
`;

describe("reading ansible-playbook output", () => {
  it("reads the PLAY RECAP per host", () => {
    const recap = parseRecap(OUTPUT);
    expect(recap["t-node-1"]).toEqual({
      ok: 4,
      changed: 2,
      unreachable: 1,
      failed: 0,
      skipped: 3,
      rescued: 0,
      ignored: 0,
    });
    expect(totalChanged(recap)).toBe(2);
  });

  it("names each failed or unreachable host with its message", () => {
    expect(describeFailures(OUTPUT)).toBe(
      "t-node-0 failed: Missing inventory variable ringlab_shared_dir; t-node-1 unreachable: Failed to connect to the host via ssh: timed out",
    );
  });

  it("reads the message of a failure printed in the YAML result format", () => {
    const yamlFormat = [
      "failed: [t-node-0] (item=ringlab_shared_dir) => ",
      "    ansible_loop_var: item",
      "    changed: false",
      "    msg: Inventory variable 'ringlab_shared_dir' is missing or empty for host t-node-0",
      "ok: [t-node-0] => (item=ringlab_cluster_cidr)",
      "fatal: [t-node-1]: FAILED! => ",
      "    msg: |-",
      "      Worker rank 1 on t-node-1 exited with code 3;",
      "      its log is /r/worker-1.log",
      "",
      "TASK [worker : Fail when the head wrote no result] *****************************",
      "fatal: [t-node-2]: FAILED! => ",
      "    changed: false",
      "    msg: 'Worker rank 0 on t-node-2 exited with code 0 but wrote no result (/shared/runs/r1/result.json:",
      "        the remote file does not exist, not transferring, ignored)'",
      "",
      "PLAY RECAP *********************************************************************",
    ].join("\n");
    expect(describeFailures(yamlFormat)).toBe(
      "t-node-0 failed: Inventory variable 'ringlab_shared_dir' is missing or empty for host t-node-0; " +
        "t-node-1 failed: Worker rank 1 on t-node-1 exited with code 3;; " +
        // A long quoted message that Ansible wrapped over two lines comes back whole.
        "t-node-2 failed: Worker rank 0 on t-node-2 exited with code 0 but wrote no result (/shared/runs/r1/result.json: " +
        "the remote file does not exist, not transferring, ignored)",
    );
  });
});

describe("Ansible adapter", () => {
  it("says Ansible is not installed when ansible-playbook is missing", async () => {
    const error = await new Ansible(ansibleDir, "ansible-playbook-that-does-not-exist")
      .playbook("site.yml", { inventory: "/dev/null" })
      .catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(error.hint).toMatch(/apt-get install ansible/);
  });

  /**
   * An inventory without ringlab_shared_dir; its address is unroutable, so a connection attempt would show as a
   * timeout.
   */
  function inventoryWithoutSharedDir(): { dir: string; inventory: string } {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-ansible-"));
    const inventory = join(dir, "inventory.yml");
    writeFileSync(
      inventory,
      `all:
  vars: {ringlab_testbed: t, ringlab_target: local, ringlab_shared_storage: bind, ringlab_cluster_cidr: 10.9.0.0/24,
         ringlab_worker_image: w, ansible_user: root, ansible_ssh_private_key_file: ${dir}/key}
  children:
    head: {hosts: {t-node-0: {ansible_host: 192.0.2.1, ringlab_private_ip: 10.9.0.10, ringlab_node_rank: 0, ringlab_node_container: c0}}}
    workers: {hosts: {}}
`,
    );
    return { dir, inventory };
  }

  it("fails fast, naming the missing inventory variable, before connecting to any node", async () => {
    const { dir, inventory } = inventoryWithoutSharedDir();
    const started = Date.now();
    const error = await new Ansible(ansibleDir)
      .playbook("site.yml", { inventory, factCacheDir: join(dir, "facts") })
      .catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error.message).toMatch(/^ansible-playbook site\.yml failed: .*ringlab_shared_dir/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("checks run.yml's inventory too, unless the checks are left out by tag, as the CLI does on its own inventory", async () => {
    const { dir, inventory } = inventoryWithoutSharedDir();
    const ansible = new Ansible(ansibleDir);
    const checked = await ansible.playbook("run.yml", { inventory, factCacheDir: join(dir, "facts") }).catch((e) => e);
    expect(checked.message).toMatch(/^ansible-playbook run\.yml failed: .*ringlab_shared_dir/);
    // Left out, the checks cost no round per node, and the play goes on to its own first task (the jobs' check).
    const unchecked = await ansible
      .playbook("run.yml", { inventory, factCacheDir: join(dir, "facts"), skipTags: ["inventory_checks"] })
      .catch((e) => e);
    expect(unchecked).toBeInstanceOf(ToolError);
    expect(unchecked.message).not.toMatch(/ringlab_shared_dir/);
    expect(unchecked.message).toMatch(/worker_jobs/);
  });
});

describe("values ringlab passes to Ansible", () => {
  /** A value that, if Ansible templated it, would create `marker` on the controller. */
  const injection = (marker: string) => `/tmp/r-{{ lookup('pipe', 'touch ${marker}') }}`;

  it("reach a playbook as literal text, never as templates run on the controller", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-literal-"));
    const inventory = join(dir, "inventory.yml");
    writeFileSync(
      inventory,
      renderInventory(
        buildInventory({
          testbed: "lit",
          target: "local",
          sshUser: "root",
          sshPrivateKeyFile: join(dir, "id_ed25519"),
          knownHostsFile: join(dir, "known_hosts"),
          sharedStorage: "bind",
          sharedDir: injection(join(dir, "from-inventory")),
          clusterCidr: "10.77.0.0/24",
          workerImage: "ringlab/worker:cpu",
          workerImageSource: "present",
          nodes: [{ name: "lit-node-0", rank: 0, sshAddress: "127.0.0.1", privateIp: "10.77.0.10", container: "c0" }],
        }),
      ),
    );
    const out = join(dir, "out.txt");
    await new Ansible(ansibleDir).playbook("../test/fixtures/literal-vars.yml", {
      inventory,
      factCacheDir: join(dir, "facts"),
      extraVars: {
        ansible_connection: "local",
        probe_out_file: out,
        probe_text: injection(join(dir, "from-extra-var")),
        probe_args: ["--tag", injection(join(dir, "from-list"))],
      },
    });
    expect(readFileSync(out, "utf8").split("\n")).toEqual([
      injection(join(dir, "from-extra-var")),
      injection(join(dir, "from-inventory")),
      "--tag",
      injection(join(dir, "from-list")),
      "",
    ]);
    for (const marker of ["from-extra-var", "from-inventory", "from-list"])
      expect(existsSync(join(dir, marker))).toBe(false);
  });

  it("leave no vars file behind", async () => {
    // A temporary folder of this test's own: the shared one holds other test files' vars files while they run.
    const dir = mkdtempSync(join(tmpdir(), "ringlab-literal-"));
    const privateTmp = join(dir, "tmp");
    mkdirSync(privateTmp);
    const inventory = join(dir, "inventory.yml");
    writeFileSync(inventory, "all:\n  hosts:\n    localhost: {ansible_connection: local, ringlab_shared_dir: /s}\n");
    const saved = process.env["TMPDIR"];
    process.env["TMPDIR"] = privateTmp;
    // What appears in it while the playbook runs: the adapter's vars folder must be among it.
    const appeared: string[] = [];
    const watcher = watch(privateTmp, (_event, name) => {
      if (name !== null) appeared.push(String(name));
    });
    try {
      await new Ansible(ansibleDir).playbook("../test/fixtures/literal-vars.yml", {
        inventory,
        factCacheDir: join(dir, "facts"),
        extraVars: { probe_out_file: join(dir, "out.txt"), probe_text: "secret", probe_args: [] },
      });
    } finally {
      watcher.close();
      if (saved === undefined) delete process.env["TMPDIR"];
      else process.env["TMPDIR"] = saved;
    }
    // The vars reached the playbook through a folder made in that folder, which is gone.
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toContain("secret");
    expect(appeared.some((name) => name.startsWith("ringlab-vars-"))).toBe(true);
    expect(readdirSync(privateTmp).filter((name) => name.startsWith("ringlab-vars-"))).toEqual([]);
  });
});
