// `captf-module init`: writes the skeleton of a role's module into a directory that is empty,
// or absent, or (with --force) whatever it is: then only the skeleton's own files are replaced.
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Role } from "@captf/contract/roles";
import type { Runtime } from "tfcapi-lint";
import { CommandError, exitCodes, report, type CliIo, type OutputFormat } from "../io.js";
import { moduleSkeleton } from "./skeleton.js";

export interface InitOptions {
  role: Role;
  dir: string;
  runtime: Runtime;
  force: boolean;
  format: OutputFormat;
}

/** What `init` wrote, as `-o json` prints it. */
export interface InitReport {
  dir: string;
  role: Role;
  files: string[];
  /** Skeleton files that replaced existing ones (only with --force). */
  replaced: string[];
}

/** Writes the skeleton; refuses a directory with entries unless `force`. */
export function initModule(options: Omit<InitOptions, "format">): InitReport {
  const dir = resolve(options.dir);
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory())
      throw new CommandError(`${options.dir} exists and is not a directory: name a new or empty directory`, "NotADirectory");
    const entries = readdirSync(dir);
    if (entries.length > 0 && !options.force) {
      const shown = entries.slice(0, 5).join(", ") + (entries.length > 5 ? `, and ${entries.length - 5} more` : "");
      throw new CommandError(
        `${options.dir} is not empty (${shown}): name an empty directory, or pass --force to write the skeleton's files over it`,
        "DirectoryNotEmpty",
      );
    }
  }
  const files = moduleSkeleton(options.role, options.runtime);
  const replaced: string[] = [];
  for (const file of files) {
    const path = join(dir, file.path);
    if (existsSync(path)) replaced.push(file.path);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, file.text);
  }
  return { dir, role: options.role, files: files.map((file) => file.path), replaced };
}

export function runInit(io: CliIo, options: InitOptions): number {
  const result = initModule(options);
  const lines = [
    `captf-module: a ${result.role} module in ${result.dir}: ${result.files.join(", ")}`,
    ...(result.replaced.length > 0 ? [`replaced (--force): ${result.replaced.join(", ")}`] : []),
    "next: tfcapi-lint module . --role " +
      result.role +
      " --strict; tofu init && tofu test; captf-module build --runtime <tofu binary> --out <dir> --tag <tag>",
  ];
  report(io, options.format, result, `${lines.join("\n")}\n`);
  return exitCodes.ok;
}
