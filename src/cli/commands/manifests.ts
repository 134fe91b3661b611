/**
 * `ringlab manifests <file> [--run ID] [--out DIR]`: a Kubernetes campaign's runs as the objects that run them (a
 * NetworkPolicy, a headless Service and an Indexed Job each, src/kubernetes/manifests.ts), for `kubectl apply -f`:
 * the seed's kubetpl, done by the tool. Not the run's Secret: its value is written nowhere; each file's header says
 * how to create it. Says on stderr what Pod Security level the pods need, and warns where a NetworkPolicy cannot
 * apply (hostNetwork). Contacts no cluster.
 */
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { planCampaign } from "../../campaign/plan.ts";
import { loadKubernetesCampaignFile } from "../../config/load.ts";
import { UsageError } from "../../util/errors.ts";
import { campaignNameOf } from "../../rules/names.ts";
import { writeFileAtomic } from "../../util/fs.ts";
import { parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";
import { err, out } from "../../util/output.ts";

export function registerManifests(program: Command, host: CommandHost): void {
  program
    .command("manifests")
    .description(
      "write a Kubernetes campaign's runs (testbed.target: kubernetes) as a NetworkPolicy, a headless Service and an Indexed Job each, for `kubectl apply -f` " +
        "once the run's Secret exists (each file's header says how); contacts no cluster",
    )
    .argument("<campaign>", "campaign YAML file whose testbed is a Kubernetes cluster")
    .option("--run <id>", "only this run (the ids `ringlab manifests` writes, as the campaign plans them)")
    .option("--out <dir>", "write <dir>/<run>.yaml, one file per run, instead of printing them all", parseSafePath)
    .action(
      host.action(async (file: string, options: { run?: string; out?: string }) => {
        // Loaded when the command runs (kubernetes-models is half the modules a start would otherwise load).
        const { campaignPodSecurity, manifestsYaml, networkPolicyWarning, podSecurityLine, runManifests } =
          await import("../../targets/kubernetes/manifests.ts");
        const campaign = loadKubernetesCampaignFile(file);
        const plan = planCampaign(campaign, campaignNameOf(campaign.sourceFile));
        const runs = options.run === undefined ? plan.runs : plan.runs.filter((run) => run.id === options.run);
        if (runs.length === 0) {
          const ids = plan.runs.map((run) => run.id);
          throw new UsageError(`${file} plans no run ${JSON.stringify(options.run)}`, {
            hint: `its runs: ${ids.slice(0, 5).join(", ")}${ids.length > 5 ? `, ... (${ids.length} in all)` : ""}`,
          });
        }
        const timeout = campaign.campaign!.runTimeoutSeconds;
        const files = runs.map((run) => ({
          run,
          yaml: manifestsYaml(runManifests(run, campaign.testbed, plan.name, timeout), campaign.testbed),
        }));
        const unguarded = networkPolicyWarning(campaign.testbed);
        err(
          `${podSecurityLine(campaignPodSecurity(runs, campaign.testbed, plan.name, timeout))}\n${unguarded === undefined ? "" : `warning: ${unguarded}\n`}`,
        );
        if (options.out === undefined) {
          out(files.map(({ yaml }) => yaml).join(""));
          return;
        }
        for (const { run, yaml } of files) {
          const path = join(resolve(options.out), `${run.id}.yaml`);
          writeFileAtomic(path, yaml);
          out(`${path}\n`);
        }
      }),
    );
}
