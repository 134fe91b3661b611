/**
 * The language-model families, keyed by the registry's names: a new family is its unit beside these and a line here
 * (and its module in the worker's models/). A family the registry names without a unit does not compile. Pure.
 */
import type { ModelFamily } from "../../config/registry.ts";
import type { FamilyCounts } from "./family.ts";
import { gpt2 } from "./gpt2.ts";
import { llama } from "./llama.ts";

export type { FamilyCounts };

export const FAMILIES: Readonly<Record<ModelFamily, FamilyCounts>> = { gpt2, llama };
