// `captf-module build`: flags to BuildOptions, and the report.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Role } from "@captf/contract/roles";
import { exitCodes, report, UsageError, type CliIo, type OutputFormat } from "../io.js";
import { pushBuiltImage, pushText } from "../push/push-command.js";
import { parseDestination, tagPattern } from "../push/reference.js";
import type { PushReport } from "../push/registry-push.js";
import { buildModuleImage, runtimeBinaryOf, type BuildReport, type RuntimeBinary } from "./image.js";
import { imageArchitectures, type RuntimeName } from "./runtime.js";
import { runtimesFromImage } from "./runtime-from.js";

export { tagPattern };

/** `--runtime [linux/<arch>=]<path>`: the path, and the platform when the flag names one. */
export function parseRuntimeFlag(value: string): { arch?: string; path: string } {
  const match = /^linux\/([a-z0-9]+)=(.+)$/.exec(value);
  if (!match) {
    if (/^[a-z]+\/[a-z0-9]+=/.test(value)) throw new UsageError(`--runtime ${value}: the platform must be linux/amd64 or linux/arm64`);
    return { path: value };
  }
  if (!(imageArchitectures as readonly string[]).includes(match[1]!))
    throw new UsageError(`--runtime ${value}: the platform must be linux/amd64 or linux/arm64`);
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
  /** Instead of `runtime`: the image whose /captf/runtime (each platform's) the new image ships. */
  runtimeFrom?: string;
  runtimeName?: RuntimeName;
  runtimeVersion?: string;
  providers?: string;
  /** The layout to build into; absent with `push`: a temporary one. */
  out?: string;
  /** The tag; absent with `push`: the destination's. */
  tag?: string;
  /** Straight into a registry: `<registry>/<repository>:<tag>`. */
  push?: string;
  plainHttp: boolean;
  name?: string;
  version?: string;
  source?: string;
  revision?: string;
  label: readonly string[];
  format: OutputFormat;
}

/** The report's text; `pushed` and no layout of the user's: the image is named where it was pushed. */
function text(result: BuildReport, pushed: PushReport | undefined, keptLayout: boolean): string {
  const where = keptLayout ? result.layout : "a temporary layout";
  const lines = [
    `captf-module: ${where}:${result.tag} = ${result.digest}`,
    `  ${result.role} module, ${result.runtime.name} ${result.runtime.version}, user ${result.user}, created ${result.created}`,
  ];
  for (const platform of result.platforms) {
    const providers =
      platform.providers.length === 0
        ? "no providers"
        : platform.providers
            .map((entry) => `${entry.address} ${entry.version}${entry.verified ? "" : " (not in the lock file's hashes)"}`)
            .join(", ");
    lines.push(`  ${platform.platform}: ${where}:${platform.ref} = ${platform.digest} (${providers})`);
  }
  const image =
    keptLayout || !pushed ? `oci:${result.layout}:${result.tag}` : `${pushed.destination.replace(/:[^:/]+$/, "")}@${pushed.digest}`;
  const check = `check it: tfcapi-lint image ${image} --role ${result.role} --all-platforms --strict`;
  return `${lines.join("\n")}\n${pushed ? pushText(pushed) : ""}${check}\n`;
}

/** What build did: the image, and where it was pushed when it was. */
export type BuildResult = BuildReport & { pushed?: PushReport };

export async function runBuild(io: CliIo, flags: BuildFlags): Promise<number> {
  const destination = flags.push === undefined ? undefined : parseDestination(flags.push);
  const tag = flags.tag ?? destination?.tag;
  if (tag === undefined) throw new UsageError("--tag: name the image's tag (or build straight into a registry with --push)");
  if (!tagPattern.test(tag)) throw new UsageError(`--tag ${tag}: a tag is 1 to 128 letters, digits, _ . and -, not starting with . or -`);
  if (flags.out === undefined && destination === undefined)
    throw new UsageError("--out: name the OCI layout to build into, or --push a registry");
  if ((flags.runtimeFrom === undefined) === (flags.runtime.length === 0))
    throw new UsageError("name the runtime once: --runtime <binary> (per platform) or --runtime-from <image>");
  const cwd = io.cwd ?? process.cwd();
  const env = io.env ?? process.env;
  const work = mkdtempSync(join(tmpdir(), "captf-module-build-"));
  try {
    let runtimes: RuntimeBinary[];
    let runtimeName = flags.runtimeName;
    let runtimeVersion = flags.runtimeVersion;
    if (flags.runtimeFrom !== undefined) {
      const taken = await runtimesFromImage(flags.runtimeFrom, work, { insecure: flags.plainHttp, env });
      runtimes = taken.runtimes;
      runtimeName ??= taken.name;
      runtimeVersion ??= taken.version;
    } else {
      runtimes = flags.runtime.map((value) => {
        const { arch, path } = parseRuntimeFlag(value);
        return runtimeBinaryOf(resolve(cwd, path), arch);
      });
    }
    const built = buildModuleImage({
      moduleDir: resolve(cwd, flags.dir),
      role: flags.role,
      runtimes,
      runtimeName,
      runtimeVersion,
      providersDir: flags.providers === undefined ? undefined : resolve(cwd, flags.providers),
      out: flags.out === undefined ? join(work, "layout") : resolve(cwd, flags.out),
      tag,
      title: flags.name,
      version: flags.version,
      source: flags.source,
      revision: flags.revision,
      labels: parseLabels(flags.label),
      sourceDateEpoch: env.SOURCE_DATE_EPOCH,
    });
    const pushed = destination === undefined ? undefined : await pushBuiltImage(io, built.layout, tag, destination, flags.plainHttp);
    const result: BuildResult = { ...built, ...(pushed ? { pushed } : {}) };
    report(io, flags.format, result, text(built, pushed, flags.out !== undefined));
    return exitCodes.ok;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
