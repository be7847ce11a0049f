// `build --runtime-from <image>`: the runtime of an existing module image (a registry's, or oci:<layout>:<tag>), one binary
// per linux/amd64 and linux/arm64 image it has, with the runtime and release its io.captf.runtime* labels name.
import { chmodSync, writeFileSync } from "node:fs";
import { join, posix } from "node:path";
import { isIndex, parseDocument, readJsonBlob, type Descriptor, type ImageSource } from "@captf/contract/oci";
import { decompressed, openSource, readTar } from "tfcapi-lint";
import { CommandError } from "../io.js";
import type { RuntimeBinary } from "./image.js";
import { imageArchitectures, runtimeNames, type RuntimeName } from "./runtime.js";

export interface ImageRuntimes {
  readonly image: string;
  readonly runtimes: RuntimeBinary[];
  /** From the image's labels; absent when it has none (the binary for this machine is asked). */
  readonly name?: RuntimeName;
  readonly version?: string;
}

/** What a layer's entry means for /captf/runtime: the file, its removal by a whiteout, or nothing. */
export function runtimeEntry(tarName: string): "runtime" | "removed" | undefined {
  const path = posix.normalize(`/${tarName}`).replace(/\/+$/, "");
  if (path === "/captf/runtime") return "runtime";
  if (path === "/captf/.wh.runtime" || path === "/captf/.wh..wh..opq" || path === "/.wh.captf") return "removed";
  return undefined;
}

interface PlatformImage {
  readonly arch: string;
  readonly layers: readonly Descriptor[];
  readonly labels: Readonly<Record<string, string>>;
}

async function platformImage(source: ImageSource, bytes: Buffer, what: string): Promise<PlatformImage> {
  const manifest = parseDocument(bytes, what);
  if (!manifest.config) throw new CommandError(`${what} has no config: not an image`, "RuntimeImageInvalid");
  const config = (await readJsonBlob(source, manifest.config)) as {
    architecture?: string;
    config?: { Labels?: Record<string, string> | null };
  };
  return { arch: config.architecture ?? "", layers: manifest.layers ?? [], labels: config.config?.Labels ?? {} };
}

/** The bytes of /captf/runtime in the image: the topmost layer that has it, unless a layer above removes it. */
async function runtimeBytes(source: ImageSource, layers: readonly Descriptor[]): Promise<Buffer | undefined> {
  for (const layer of [...layers].reverse()) {
    let found: Buffer | "removed" | "link" | undefined;
    await readTar(
      decompressed(await source.blob(layer)),
      (header) => {
        const entry = runtimeEntry(header.name);
        if (entry === "removed") found = "removed";
        else if (entry === "runtime" && header.type !== "file") found = "link";
        else if (entry === "runtime") return "keep";
        return "skip";
      },
      (_header, body) => {
        found = body;
      },
    );
    if (found === "removed") return undefined;
    if (found === "link")
      throw new CommandError(
        "its /captf/runtime is not a regular file: take the runtime from an image built by captf-module",
        "RuntimeImageInvalid",
      );
    if (found) return found;
  }
  return undefined;
}

/** Writes each platform's runtime of `image` into `into` and says which runtime it is. */
export async function runtimesFromImage(
  image: string,
  into: string,
  options: { insecure: boolean; env: Readonly<Record<string, string | undefined>> },
): Promise<ImageRuntimes> {
  try {
    return await readRuntimes(image, into, openSource(image, options.insecure, options.env));
  } catch (error) {
    if (error instanceof CommandError) throw error;
    throw new CommandError(`--runtime-from ${image}: ${(error as Error).message}`, "RuntimeImageUnreadable", { cause: error });
  }
}

async function readRuntimes(image: string, into: string, source: ImageSource): Promise<ImageRuntimes> {
  const root = await source.root();
  const platforms: PlatformImage[] = [];
  if (isIndex(root.mediaType)) {
    for (const child of parseDocument(root.bytes, image).manifests ?? []) {
      const arch = child.platform?.architecture;
      if (child.platform?.os !== "linux" || !(imageArchitectures as readonly (string | undefined)[]).includes(arch)) continue;
      platforms.push(await platformImage(source, (await source.manifest(child)).bytes, `${image} (linux/${arch})`));
    }
  } else {
    platforms.push(await platformImage(source, root.bytes, image));
  }
  const runtimes: RuntimeBinary[] = [];
  const labelled = new Set<string>();
  for (const platform of platforms) {
    if (!(imageArchitectures as readonly string[]).includes(platform.arch)) continue;
    const bytes = await runtimeBytes(source, platform.layers);
    if (!bytes) continue;
    const path = join(into, `runtime-${platform.arch}`);
    writeFileSync(path, bytes);
    chmodSync(path, 0o755);
    runtimes.push({ arch: platform.arch, path });
    labelled.add(`${platform.labels["io.captf.runtime"] ?? ""} ${platform.labels["io.captf.runtime.version"] ?? ""}`);
  }
  if (runtimes.length === 0)
    throw new CommandError(`${image} has no /captf/runtime for linux/amd64 or linux/arm64: name a captf module image`, "RuntimeMissing");
  if (labelled.size > 1)
    throw new CommandError(
      `${image}'s platforms name different runtimes (${[...labelled].join(", ")}): its io.captf.runtime labels disagree`,
      "RuntimeMismatch",
    );
  const [name, version] = [...labelled][0]!.split(" ");
  const known = (runtimeNames as readonly string[]).includes(name!) && version !== "";
  return { image, runtimes, ...(known ? { name: name as RuntimeName, version: version! } : {}) };
}
