/**
 * The reference docs (docs/campaign.schema.json, docs/campaign-file.md, docs/cli.md) are what scripts/gen-docs.ts
 * writes from the code, and the JSON Schema agrees with ringlab's own loader: every shipped campaign passes it, and a
 * broken one fails both at the same field.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { load as loadYaml } from "js-yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { JSON_SCHEMA_DRAFT } from "../../src/config/json-schema.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { ConfigError } from "../../src/util/errors.ts";
import { referenceDocs } from "../../scripts/gen-docs.ts";

const SCHEMA_FILE = "docs/campaign.schema.json";

describe("the reference docs", () => {
  const generated = referenceDocs();

  for (const [path, text] of Object.entries(generated)) {
    it(`${path} is what the generator writes`, () => {
      expect(readFileSync(path, "utf8"), `${path} is out of date: run \`npx tsx scripts/gen-docs.ts\``).toBe(text);
    });
  }

  it("`ringlab schema` prints the committed schema", () => {
    const result = spawnSync(process.execPath, [resolve("src/bin/ringlab.mjs"), "schema"], { encoding: "utf8" });
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe(readFileSync(SCHEMA_FILE, "utf8"));
  });
});

describe("the campaign file's JSON Schema against ringlab's loader", () => {
  let validate: ValidateFunction;
  beforeAll(() => {
    const schema = JSON.parse(readFileSync(SCHEMA_FILE, "utf8")) as { $schema: string };
    // z.toJSONSchema writes draft 2020-12, which ajv reads through its own class for that draft.
    expect(JSON_SCHEMA_DRAFT).toBe("draft-2020-12");
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    addFormats.default(ajv);
    validate = ajv.compile(schema);
  });

  for (const name of readdirSync("campaigns")
    .filter((file) => file.endsWith(".yaml"))
    .sort()) {
    it(`campaigns/${name} is valid, and names the schema on its first line for editors`, () => {
      const text = readFileSync(`campaigns/${name}`, "utf8");
      const valid = validate(loadYaml(text));
      expect(valid ? [] : validate.errors).toEqual([]);
      expect(text.split("\n")[0]).toBe("# yaml-language-server: $schema=../docs/campaign.schema.json");
    });
  }

  const VALID = `testbed: {target: local, name: t, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 32, bandwidth: 1gbit}
  probe: {iters: 3}
  launcher: ansible
`;
  const BROKEN = [
    { what: "an unknown field", text: VALID.replace("iters: 3", "itres: 3"), path: "campaign.probe.itres" },
    { what: "a wrong choice", text: VALID.replace("launcher: ansible", "launcher: pbs"), path: "campaign.launcher" },
    {
      what: "a wrong choice in a list",
      text: VALID.replace("model: tiny", "model: [tiny, resnet5]"),
      path: "campaign.matrix.model.1",
    },
    { what: "a number out of range", text: VALID.replace("iters: 3", "iters: 0"), path: "campaign.probe.iters" },
    { what: "a missing field", text: VALID.replace("batchSize: 32, ", ""), path: "campaign.matrix.batchSize" },
    {
      what: "an unknown field of a target's section",
      text: VALID.replace("nodes: 2}", "nodes: 2, subnett: 10.1.0.0/24}"),
      path: "testbed.subnett",
    },
  ];

  it("the campaign the broken ones start from is valid to both", () => {
    expect(validate(loadYaml(VALID))).toBe(true);
    expect(() => parseCampaign(VALID, "c.yaml")).not.toThrow();
  });

  for (const { what, text, path } of BROKEN) {
    it(`${what} is refused by both, at ${path}`, () => {
      expect(validate(loadYaml(text))).toBe(false);
      // A union (the testbed's target, a value or a list) fails in each of its branches: the loader's path is among
      // them.
      expect(validate.errors!.map(errorPath)).toContain(path);
      expect(loaderPaths(text)).toEqual([path]);
    });
  }
});

/** ajv's error as a dotted field path, the loader's way: a missing or unknown key at the key itself. */
function errorPath(error: ErrorObject): string {
  const key =
    error.keyword === "additionalProperties"
      ? (error.params as { additionalProperty: string }).additionalProperty
      : error.keyword === "required"
        ? (error.params as { missingProperty: string }).missingProperty
        : undefined;
  const steps = error.instancePath.split("/").slice(1);
  return [...steps, ...(key === undefined ? [] : [key])].join(".");
}

function loaderPaths(text: string): string[] {
  try {
    parseCampaign(text, "c.yaml");
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((problem) => problem.path);
    throw error;
  }
  return [];
}
