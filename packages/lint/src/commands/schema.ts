// `tfcapi-lint schema <dir>`: the JSON Schema of a module's user variables, for the
// io.captf.variables-schema image label.
import { resolve } from "node:path";
import type { Role } from "@captf/contract/roles";
import { loadModule } from "../module/load.js";
import { ModuleParseError } from "../module/model.js";
import { maxSchemaLabelBytes, variablesSchema } from "../schema/variables-schema.js";
import { exitCodes, type CliIo } from "./io.js";

export async function runSchema(io: CliIo, dir: string, role: Role): Promise<number> {
  let module;
  try {
    module = await loadModule(resolve(io.cwd ?? process.cwd(), dir));
  } catch (error) {
    if (!(error instanceof ModuleParseError)) throw error;
    const f = error.failure;
    io.stderr.write(`tfcapi-lint schema: ${f.file ? `${f.file}:${f.line}:${f.column}: ` : ""}${f.message}\n`);
    return exitCodes.unreadable;
  }
  const text = JSON.stringify(variablesSchema(module, role));
  const bytes = Buffer.byteLength(text);
  if (bytes > maxSchemaLabelBytes) {
    io.stderr.write(
      `tfcapi-lint schema: the schema is ${bytes} bytes, more than the label limit of ${maxSchemaLabelBytes}; simplify variable ` +
        `types or drop variables the image need not describe\n`,
    );
    return exitCodes.findings;
  }
  io.stdout.write(`${text}\n`);
  return exitCodes.ok;
}
