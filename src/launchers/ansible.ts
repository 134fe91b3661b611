/** The default launcher: Ansible starts every node's worker container (ansible/roles/worker/tasks/job.yml). */
import type { Launcher } from "./launcher.ts";

export const ansibleLauncher: Launcher = {
  name: "ansible",
  summary: "Ansible starts the workers",
  role: "worker",
};
