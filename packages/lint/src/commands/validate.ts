// `tfcapi-lint validate`: a role's inputs or outputs document against the contract's JSON Schema.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parseJsonExact, validateDocument, type DocumentKind, type Role } from "@captf/contract";
import { exitCodes, type CliIo } from "./io.js";

export interface ValidateOptions {
  readonly file: string;
  readonly role: Role;
  readonly document: DocumentKind;
  readonly json: boolean;
}

export async function runValidate(io: CliIo, o: ValidateOptions): Promise<number> {
  let text: string;
  try {
    text = await readFile(resolve(io.cwd ?? process.cwd(), o.file), "utf8");
  } catch (error) {
    io.stderr.write(`tfcapi-lint validate: cannot read ${o.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    return exitCodes.unreadable;
  }
  let document: unknown;
  try {
    document = parseJsonExact(text);
  } catch (error) {
    io.stderr.write(`tfcapi-lint validate: ${o.file} is not JSON: ${(error as Error).message}\n`);
    return exitCodes.unreadable;
  }
  const result = validateDocument(o.role, o.document, document);
  if (o.json) {
    io.stdout.write(
      `${JSON.stringify({ file: o.file, role: o.role, document: o.document, valid: result.valid, errors: result.errors }, null, 2)}\n`,
    );
  } else if (result.valid) {
    io.stdout.write(`${o.file}: a valid ${o.role} ${o.document} document\n`);
  } else {
    for (const e of result.errors) io.stdout.write(`${o.file}: ${e.path || "/"}: ${e.message}\n`);
    io.stdout.write(`${result.errors.length} error(s)\n`);
  }
  return result.valid ? exitCodes.ok : exitCodes.findings;
}
