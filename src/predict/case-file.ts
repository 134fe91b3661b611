/**
 * Reads a published case file (`ringlab predict --case`): the YAML through the one loader (src/config/load.ts), the
 * schema (./case.ts), then what the schema cannot know: a model name the registry has, a sequence within the model's
 * positions. Any problem is exit 2 naming the file and the field, before anything is predicted.
 */
import { MODEL_KIND } from "../config/registry.ts";
import { loadYamlDocument } from "../config/load.ts";
import { ConfigError, type ConfigProblemAt } from "../util/errors.ts";
import { type CaseFile, validateCase } from "./case.ts";
import { caseShape } from "./case-score.ts";

const EXPECTED = "a published case YAML file (see test/bench/data/published/ for examples)";

export function loadCaseFile(path: string): CaseFile {
  const result = validateCase(loadYamlDocument(path, EXPECTED));
  if ("problems" in result) throw new ConfigError(path, result.problems);
  const problems = caseProblems(result.case);
  if (problems.length > 0) throw new ConfigError(path, problems);
  return result.case;
}

/** The rules across a case's fields and the registry. */
export function caseProblems(file: CaseFile): ConfigProblemAt[] {
  if (typeof file.model === "string" && !(file.model in MODEL_KIND)) {
    const models = Object.keys(MODEL_KIND).join(", ");
    return [
      {
        path: "model",
        message: `${JSON.stringify(file.model)} is not a model of the registry; expected one of ${models}, a shape, or {parameters}`,
      },
    ];
  }
  const shape = caseShape(file);
  if (shape === undefined) return [];
  const problems: ConfigProblemAt[] = [];
  if (shape.width % shape.heads !== 0)
    problems.push({ path: "model.width", message: `${shape.width} is not a multiple of heads ${shape.heads}` });
  if (shape.heads % shape.kvHeads !== 0)
    problems.push({ path: "model.kvHeads", message: `${shape.kvHeads} does not divide heads ${shape.heads}` });
  if (file.batch?.sequence === undefined)
    problems.push({ path: "batch.sequence", message: "a language model's case needs its tokens per sample" });
  else if (shape.sequenceLength > shape.maxPositions)
    problems.push({
      path: "batch.sequence",
      message: `${shape.sequenceLength} is more than the model's ${shape.maxPositions} positions`,
    });
  return problems;
}
