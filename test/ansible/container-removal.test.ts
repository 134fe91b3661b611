import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";

// A CI run failed when a worker exited between community.docker.docker_container's look-up and its kill: the
// engine answered 409 "Container ... is not running" and stop-workers.yml failed the campaign's teardown. Every
// task that removes a container with force_kill must ask again (until/retries), when the container is found stopped.

type Task = Record<string, unknown> & { block?: Task[]; rescue?: Task[]; always?: Task[] };

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.ya?ml$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

function tasksIn(tasks: unknown): Task[] {
  if (!Array.isArray(tasks)) return [];
  return tasks.flatMap((task: Task) => [
    task,
    ...tasksIn(task.block),
    ...tasksIn(task.rescue),
    ...tasksIn(task.always),
    ...tasksIn(task.tasks),
  ]);
}

describe("container removal", () => {
  const removals = yamlFiles("ansible").flatMap((file) =>
    tasksIn(load(readFileSync(file, "utf8"))).flatMap((task) => {
      const module = (task["community.docker.docker_container"] ?? task.docker_container) as
        | Record<string, unknown>
        | undefined;
      return module?.state === "absent" && module.force_kill ? [{ file, task }] : [];
    }),
  );

  it("finds the playbooks' forced removals", () => {
    expect(removals.map(({ file }) => file).sort()).toEqual([
      "ansible/roles/worker/tasks/job.yml",
      "ansible/roles/worker/tasks/stop.yml",
    ]);
  });

  it("asks again when the worker exited between the look-up and the kill", () => {
    for (const { file, task } of removals) {
      const name = `${file}: ${String(task.name)}`;
      expect(task.register, name).toMatch(/^_\w+$/);
      expect(task.until, name).toBe(`${String(task.register)} is succeeded`);
      expect(Number(task.retries), name).toBeGreaterThanOrEqual(1);
    }
  });
});
