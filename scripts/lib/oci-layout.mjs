// What every captf image build shares. The layout pieces (one build time for every file, layer and
// config, file hashes, the OCI index of the platforms' manifests, so two builds of one commit give one
// digest) are captf-module's, the one image builder's (packages/captf-module/src/build/layout.ts), from its
// build (`pnpm build` first), with the umoci assembly of one platform's image (assembleImage, given
// runOrExit); here only what the repository's scripts add: umoci and skopeo as child processes that end the
// build on failure.
import { execFileSync } from "node:child_process";
import * as captfModule from "../../packages/captf-module/dist/index.js";

export const { assembleImage, platformDescriptor, sha256, sha256File, stampTimes, tagIndex } = captfModule;

/** The build's one time: SOURCE_DATE_EPOCH, else the commit's of `gitDir`, else the epoch. */
export function sourceDate(gitDir) {
  return captfModule.sourceDate(gitDir, process.env.SOURCE_DATE_EPOCH);
}

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

/** The compressed size of `layout:ref`'s layers in MiB, one decimal. */
export function compressedMiB(tool, layout, ref) {
  const manifest = JSON.parse(runOrExit(tool, "skopeo", ["inspect", "--raw", `oci:${layout}:${ref}`]));
  return (manifest.layers.reduce((sum, layer) => sum + layer.size, 0) / 1048576).toFixed(1);
}
