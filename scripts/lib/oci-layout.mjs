// What every captf image build shares: umoci and skopeo as child processes, one build time for
// every file, layer and config (SOURCE_DATE_EPOCH or the commit's), and the OCI index of the
// platforms' manifests, so two builds of one commit give one digest.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, lutimesSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Runs `command`, returning its stdout; exits the build with the command's stderr on failure. */
export function runOrExit(tool, command, args, options = {}) {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20, ...options });
  } catch (error) {
    if (error.code === "ENOENT") console.error(`${tool}: ${command} is required (Debian: apt-get install -y ${command})`);
    else console.error(`${tool}: ${command} ${args.join(" ")} failed:\n${error.stdout ?? ""}${error.stderr ?? error.message}`);
    process.exit(1);
  }
}

/** umoci's --rootless when not root: files then keep this user's ids, mapped to 0 in the layer. */
export const rootlessFlag = process.getuid?.() !== 0 ? ["--rootless"] : [];

/** The build's one time: SOURCE_DATE_EPOCH, else the commit's of `gitDir`, else the epoch. */
export function sourceDate(gitDir) {
  const fromEnv = process.env.SOURCE_DATE_EPOCH;
  if (fromEnv) return new Date(Number(fromEnv) * 1000);
  try {
    return new Date(
      Number(
        execFileSync("git", ["log", "-1", "--format=%ct"], { cwd: gitDir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim(),
      ) * 1000,
    );
  } catch {
    return new Date(0);
  }
}

/** Every file under `dir` (and `dir` itself) gets time `at`, so the layer's tar is the same on every build. */
export function stampTimes(dir, at) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) stampTimes(join(dir, entry.name), at);
    else lutimesSync(join(dir, entry.name), at, at);
  }
  lutimesSync(dir, at, at);
}

export const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

/** The SHA-256 of a file, read in 1 MiB pieces (runtimes and providers are 100 MiB and more). */
export function sha256File(path) {
  const hash = createHash("sha256");
  const piece = Buffer.alloc(1 << 20);
  const fd = openSync(path, "r");
  try {
    for (let read; (read = readSync(fd, piece)) > 0; ) hash.update(piece.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

const refName = "org.opencontainers.image.ref.name";

/** The manifest descriptor `ref` names in the layout's index.json, with its platform. */
export function platformDescriptor(layout, ref, arch) {
  const entry = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")).manifests.find(
    (manifest) => manifest.annotations?.[refName] === ref,
  );
  return { mediaType: entry.mediaType, digest: entry.digest, size: entry.size, platform: { architecture: arch, os: "linux" } };
}

/** Writes the OCI index of `manifests` as a blob and names it `tag` in the layout's index.json; returns its digest. */
export function tagIndex(layout, tag, manifests, createdIso) {
  const index = JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests,
    annotations: { "org.opencontainers.image.created": createdIso },
  });
  const digest = sha256(index);
  writeFileSync(join(layout, "blobs/sha256", digest), index);
  const top = JSON.parse(readFileSync(join(layout, "index.json"), "utf8"));
  top.manifests = top.manifests.filter((manifest) => manifest.annotations?.[refName] !== tag);
  top.manifests.push({
    mediaType: "application/vnd.oci.image.index.v1+json",
    digest: `sha256:${digest}`,
    size: Buffer.byteLength(index),
    annotations: { [refName]: tag },
  });
  writeFileSync(join(layout, "index.json"), JSON.stringify(top));
  return `sha256:${digest}`;
}

/** The compressed size of `layout:ref`'s layers in MiB, one decimal. */
export function compressedMiB(tool, layout, ref) {
  const manifest = JSON.parse(runOrExit(tool, "skopeo", ["inspect", "--raw", `oci:${layout}:${ref}`]));
  return (manifest.layers.reduce((sum, layer) => sum + layer.size, 0) / 1048576).toFixed(1);
}
