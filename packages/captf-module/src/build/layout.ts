// What every captf image build shares: one build time for every file, layer and config, file
// hashes, one platform's image assembled with umoci from its layers and config, and the OCI index of
// the platforms' manifests, so two builds of the same inputs give one digest. scripts/lib/oci-layout.mjs
// (the manager's and the repository's image builds) imports these from here.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, lutimesSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The build's one time: `sourceDateEpoch` (SOURCE_DATE_EPOCH, seconds) when given, else the time of
 * the last commit of the git checkout holding `gitDir`, else the epoch.
 */
export function sourceDate(gitDir: string, sourceDateEpoch?: string): Date {
  if (sourceDateEpoch) {
    const seconds = Number(sourceDateEpoch);
    if (!Number.isInteger(seconds) || seconds < 0)
      throw new TypeError(`SOURCE_DATE_EPOCH must be whole seconds since 1970, not ${JSON.stringify(sourceDateEpoch)}`);
    return new Date(seconds * 1000);
  }
  try {
    const seconds = Number(
      execFileSync("git", ["log", "-1", "--format=%ct"], { cwd: gitDir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim(),
    );
    return Number.isInteger(seconds) && seconds > 0 ? new Date(seconds * 1000) : new Date(0);
  } catch {
    return new Date(0);
  }
}

/** Gives every entry under `dir`, and `dir` itself, the time `at`, so a layer's tar is the same on every build. */
export function stampTimes(dir: string, at: Date): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) stampTimes(join(dir, entry.name), at);
    else lutimesSync(join(dir, entry.name), at, at);
  }
  lutimesSync(dir, at, at);
}

export const sha256 = (bytes: string | Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** The SHA-256 of a file, read in 1 MiB pieces (runtimes and providers are 100 MiB and more). */
export function sha256File(path: string): string {
  const hash = createHash("sha256");
  const piece = Buffer.alloc(1 << 20);
  const fd = openSync(path, "r");
  try {
    for (let read = readSync(fd, piece); read > 0; read = readSync(fd, piece)) hash.update(piece.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

export const refNameAnnotation = "org.opencontainers.image.ref.name";

/** A manifest descriptor of an OCI index. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
}

type LayoutIndex = { manifests: Descriptor[] } & Record<string, unknown>;

function layoutIndex(layout: string): LayoutIndex {
  return JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as LayoutIndex;
}

/** The manifest descriptor `ref` names in the layout's index.json, with its platform (linux/`arch`). */
export function platformDescriptor(layout: string, ref: string, arch: string): Descriptor {
  const entry = layoutIndex(layout).manifests.find((manifest) => manifest.annotations?.[refNameAnnotation] === ref);
  if (!entry) throw new Error(`${layout} names no image ${ref}`);
  return { mediaType: entry.mediaType, digest: entry.digest, size: entry.size, platform: { architecture: arch, os: "linux" } };
}

/** Writes the OCI index of `manifests` as a blob, names it `tag` in the layout's index.json and returns its digest. */
export function tagIndex(layout: string, tag: string, manifests: readonly Descriptor[], createdIso: string): string {
  const index = JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests,
    annotations: { "org.opencontainers.image.created": createdIso },
  });
  const digest = sha256(index);
  writeFileSync(join(layout, "blobs/sha256", digest), index);
  const top = layoutIndex(layout);
  top.manifests = top.manifests.filter((manifest) => manifest.annotations?.[refNameAnnotation] !== tag);
  top.manifests.push({
    mediaType: "application/vnd.oci.image.index.v1+json",
    digest: `sha256:${digest}`,
    size: Buffer.byteLength(index),
    annotations: { [refNameAnnotation]: tag },
  });
  writeFileSync(join(layout, "index.json"), JSON.stringify(top));
  return `sha256:${digest}`;
}

/** Runs a command and returns its stdout; throws (or ends the build) on failure. */
export type CommandRunner = (command: string, args: readonly string[]) => string;

/** One layer: the directory `source`'s contents put at `path` in the image, its history line saying what they are. */
export interface ImageLayer {
  source: string;
  path: string;
  createdBy: string;
}

/** One platform's image: its layers in order and its config (linux/`arch`, working directory /). */
export interface ImageAssembly {
  layout: string;
  ref: string;
  created: Date;
  layers: readonly ImageLayer[];
  arch: string;
  user: string;
  env?: readonly string[];
  entrypoint?: readonly string[];
  labels: Readonly<Record<string, string>>;
  /** umoci's --rootless for the layers: files keep this user's ids, mapped to 0 in the layer. Default: when not root. */
  rootless?: boolean;
}

/** The umoci commands that build `layout:ref` from scratch: `new`, an `insert` per layer, then `config`. */
export function imageAssemblyCommands(image: ImageAssembly): string[][] {
  const target = `${image.layout}:${image.ref}`;
  const createdIso = image.created.toISOString();
  const rootless = (image.rootless ?? process.getuid?.() !== 0) ? ["--rootless"] : [];
  const inserts = image.layers.map((layer) => [
    ...["insert", ...rootless, "--image", target, "--history.created", createdIso, "--history.created_by", layer.createdBy],
    ...[layer.source, layer.path],
  ]);
  const config = [
    ...["config", "--image", target, "--no-history", "--created", createdIso, "--config.user", image.user],
    ...(image.env ?? []).flatMap((line) => ["--config.env", line]),
    ...(image.entrypoint ?? []).flatMap((word) => ["--config.entrypoint", word]),
    ...["--config.workingdir", "/", "--architecture", image.arch, "--os", "linux"],
    ...Object.entries(image.labels).flatMap(([key, value]) => ["--config.label", `${key}=${value}`]),
  ];
  return [["new", "--image", target], ...inserts, config];
}

/** Builds one platform's image into the layout with umoci, through `run` (which fails the build on an error). */
export function assembleImage(run: CommandRunner, image: ImageAssembly): void {
  for (const args of imageAssemblyCommands(image)) run("umoci", args);
}
