// Shared by the CLI tests: run main() in-process with captured streams, and locate the fixtures.
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "./cli.js";

/** The package directory: fixture paths in goldens are relative to it. */
export const packageDir = fileURLToPath(new URL("..", import.meta.url));
export const testdataDir = join(packageDir, "testdata");

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export async function run(argv: readonly string[], options: { tty?: boolean; env?: Record<string, string> } = {}): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: { write: (s: string) => (stdout += s), isTTY: options.tty ?? false },
    stderr: { write: (s: string) => (stderr += s) },
    cwd: packageDir,
    env: options.env ?? {},
  });
  return { code, stdout, stderr };
}

/** Writes `files` (relative path → content) into a new temporary directory and returns it. */
export function writeModule(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "tfcapi-lint-test-"));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}
