/** `ringlab dataset <file>`: write the campaign's dataset to its testbed's shared storage (ansible/dataset.yml). */
import type { Command } from "commander";
import { loadCampaignFile } from "../../config/load.ts";
import { UsageError } from "../../util/errors.ts";
import { requireRecord } from "../../testbed/record.ts";
import { prepareDataset } from "../../testbed/testbed.ts";
import type { CommandHost } from "../host.ts";

export function registerDataset(program: Command, host: CommandHost): void {
  program
    .command("dataset")
    .description(
      "write the campaign's dataset (campaign.dataset) to its testbed's shared storage, once: deterministic JPEG images in ImageNet's layout that train runs read with data: dataset",
    )
    .argument("<campaign>", "campaign YAML file with a campaign.dataset section; its testbed must be up (ringlab up)")
    .action(
      host.action(async (file: string, _options: unknown, command: Command) => {
        const campaign = loadCampaignFile(file, { readKeys: false });
        const dataset = campaign.campaign?.dataset;
        if (dataset === undefined) {
          throw new UsageError(`${file} has no campaign.dataset section, so there is no dataset to write`, {
            hint: "add one (see campaigns/local-time-to-train.yaml)",
          });
        }
        if (!dataset.generate) {
          throw new UsageError(
            `campaign.dataset ${dataset.name} says generate: false: it is a dataset you place on the shared storage yourself`,
            {
              hint:
                "copy it to <sharedDir>/datasets/" +
                dataset.name +
                " in ImageNet's layout (train/<class>/*.jpg, val/<class>/*.jpg)",
            },
          );
        }
        const ctx = host.contextFor(command, "dataset");
        const record = requireRecord(ctx.stateDir, campaign.testbed.name);
        const result = await prepareDataset(ctx, record, dataset);
        ctx.reporter.info(
          result.wrote
            ? `dataset ${dataset.name}: written to ${result.path}`
            : `dataset ${dataset.name}: already at ${result.path}, unchanged`,
        );
      }),
    );
}
