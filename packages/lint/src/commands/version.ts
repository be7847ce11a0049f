// `tfcapi-lint version [--json]`: the tool's version and the contracts it lints against.
import { readFileSync } from "node:fs";
import { contractVersion } from "@captf/contract/roles";
import type { CliIo } from "./io.js";

/** The package version; package.json sits one directory above both src/ and dist/. */
export const toolVersion: string = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string })
  .version;

export const supportedContracts: readonly string[] = [contractVersion];

export function runVersion(io: CliIo, json: boolean): number {
  if (json) io.stdout.write(`${JSON.stringify({ version: toolVersion, contract: supportedContracts }, null, 2)}\n`);
  else io.stdout.write(`tfcapi-lint ${toolVersion} (contracts: ${supportedContracts.join(", ")})\n`);
  return 0;
}
