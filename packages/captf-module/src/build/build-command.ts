// `captf-module build`: flags to BuildOptions, and the report.
import { resolve } from "node:path";
import type { Role } from "@captf/contract/roles";
import { exitCodes, report, UsageError, type CliIo, type OutputFormat } from "../io.js";
import { buildModuleImage, runtimeBinaryOf, type BuildReport } from "./image.js";
import { imageArchitectures, type RuntimeName } from "./runtime.js";

/** An image tag as registries accept it (the distribution grammar). */
export const tagPattern = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** `--runtime [linux/<arch>=]<path>`: the path, and the platform when the flag names one. */
export function parseRuntimeFlag(value: string): { arch?: string; path: string } {
  const match = /^linux\/([a-z0-9]+)=(.+)$/.exec(value);
  if (!match) {
    if (/^[a-z]+\/[a-z0-9]+=/.test(value)) throw new UsageError(`--runtime ${value}: the platform must be linux/amd64 or linux/arm64`);
    return { path: value };
  }
  if (!(imageArchitectures as readonly string[]).includes(match[1]!)) throw new UsageError(`--runtime ${value}: the platform must be linux/amd64 or linux/arm64`);
  return { arch: match[1], path: match[2]! };
}

/** `--label key=value` (repeatable) as a record; a key without `=` is a usage error. */
export function parseLabels(values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const value of values) {
    const at = value.indexOf("=");
    if (at <= 0) throw new UsageError(`--label ${value}: write key=value`);
    labels[value.slice(0, at)] = value.slice(at + 1);
  }
  return labels;
}

export interface BuildFlags {
  dir: string;
  role?: Role;
  runtime: readonly string[];
  runtimeName?: RuntimeName;
  runtimeVersion?: string;
  providers?: string;
  out: string;
  tag: string;
  name?: string;
  version?: string;
  source?: string;
  revision?: string;
  label: readonly string[];
  format: OutputFormat;
}

function text(result: BuildReport): string {
  const lines = [`captf-module: ${result.layout}:${result.tag} = ${result.digest}`, `  ${result.role} module, ${result.runtime.name} ${result.runtime.version}, user ${result.user}, created ${result.created}`];
  for (const platform of result.platforms) {
    const providers = platform.providers.length === 0 ? "no providers" : platform.providers.map((entry) => `${entry.address} ${entry.version}${entry.verified ? "" : " (not in the lock file's hashes)"}`).join(", ");
    lines.push(`  ${platform.platform}: ${result.layout}:${platform.ref} = ${platform.digest} (${providers})`);
  }
  lines.push(`check it: tfcapi-lint image oci:${result.layout}:${result.tag} --role ${result.role} --all-platforms --strict`);
  return `${lines.join("\n")}\n`;
}

export function runBuild(io: CliIo, flags: BuildFlags): number {
  if (!tagPattern.test(flags.tag)) throw new UsageError(`--tag ${flags.tag}: a tag is 1 to 128 letters, digits, _ . and -, not starting with . or -`);
  const cwd = io.cwd ?? process.cwd();
  const runtimes = flags.runtime.map((value) => {
    const { arch, path } = parseRuntimeFlag(value);
    return runtimeBinaryOf(resolve(cwd, path), arch);
  });
  const result = buildModuleImage({
    moduleDir: resolve(cwd, flags.dir),
    role: flags.role,
    runtimes,
    runtimeName: flags.runtimeName,
    runtimeVersion: flags.runtimeVersion,
    providersDir: flags.providers === undefined ? undefined : resolve(cwd, flags.providers),
    out: resolve(cwd, flags.out),
    tag: flags.tag,
    title: flags.name,
    version: flags.version,
    source: flags.source,
    revision: flags.revision,
    labels: parseLabels(flags.label),
    sourceDateEpoch: io.env?.SOURCE_DATE_EPOCH,
  });
  report(io, flags.format, result, text(result));
  return exitCodes.ok;
}
