#!/usr/bin/env node
// The `ringlab` command: loads TypeScript through tsx, then hands over to the CLI.
import { register } from "tsx/esm/api";

register();
const { ignoreClosedOutput, main } = await import("../cli/main.ts");
ignoreClosedOutput();
process.exitCode = await main(process.argv);
