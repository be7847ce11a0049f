// An image's flattened filesystem: layers applied in order with their whiteouts, every entry's
// metadata kept, and only the bytes the checks read (the module, the mirror's JSON) kept at all.
import { posix } from "node:path";
import { createGunzip } from "node:zlib";
import { Readable } from "node:stream";
import { readTar, type TarHeader } from "./tar.js";

export const moduleDir = "/captf/module";
export const runtimePath = "/captf/runtime";
export const providersDir = "/captf/providers";

/** Caps what an image may make the linter keep: kept bytes, plus 512 bytes per entry. */
export const defaultMaxKeptBytes = 256 * 1024 * 1024;

export class ImageTooLargeError extends Error {}

export interface FsEntry extends Omit<TarHeader, "name"> {
  readonly path: string;
}

export interface Filesystem {
  /** Every entry by clean absolute path. */
  readonly entries: ReadonlyMap<string, FsEntry>;
  /** Kept file contents: module files and mirror JSON. */
  readonly contents: ReadonlyMap<string, Buffer>;
}

export function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}/`);
}

/** Clean absolute form of a tar name; undefined when it would climb above the root. */
export function cleanPath(name: string): string | undefined {
  const cleaned = posix.normalize(`/${name}`).replace(/\/+$/, "");
  if (cleaned.split("/").includes("..")) return undefined;
  return cleaned === "" ? "/" : cleaned;
}

function wanted(path: string): boolean {
  return within(path, moduleDir) || (within(path, providersDir) && path.endsWith(".json"));
}

/** Layers arrive as byte streams, gzip or not (detected by its magic bytes). */
export async function* decompressed(stream: AsyncIterable<Uint8Array>): AsyncIterable<Buffer> {
  const iterator = stream[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) return;
  const head = Buffer.from(first.value);
  async function* rest(): AsyncIterable<Buffer> {
    yield head;
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield Buffer.from(next.value);
    }
  }
  if (head[0] === 0x1f && head[1] === 0x8b) {
    yield* Readable.from(rest()).pipe(createGunzip()) as AsyncIterable<Buffer>;
  } else if (head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) {
    throw new Error("zstd-compressed layers are not supported; push the image with gzip layers");
  } else {
    yield* rest();
  }
}

/** Applies layers in order. `openLayer(i)` streams layer i's (possibly gzipped) tar. */
export async function flattenLayers(
  layerCount: number,
  openLayer: (index: number) => Promise<AsyncIterable<Uint8Array>>,
  maxKeptBytes = defaultMaxKeptBytes,
): Promise<Filesystem> {
  const entries = new Map<string, FsEntry>();
  const contents = new Map<string, Buffer>();
  let budget = maxKeptBytes;
  const charge = (bytes: number): void => {
    budget -= bytes;
    if (budget < 0) throw new ImageTooLargeError(`the image needs more than ${maxKeptBytes} bytes of metadata and module files`);
  };
  const removeUnder = (dir: string, keepSelf: boolean): void => {
    for (const path of [...entries.keys()]) {
      if (within(path, dir) && !(keepSelf && path === dir)) {
        entries.delete(path);
        contents.delete(path);
      }
    }
  };
  for (let i = 0; i < layerCount; i++) {
    // Whiteouts apply to lower layers only, so a layer's own entries are applied after them.
    const deletions: { path: string; opaque: boolean }[] = [];
    const added: FsEntry[] = [];
    const addedContents = new Map<string, Buffer>();
    await readTar(
      decompressed(await openLayer(i)),
      (header) => {
        charge(512);
        const path = cleanPath(header.name);
        if (path === undefined) return "skip";
        const base = posix.basename(path);
        if (base === ".wh..wh..opq") {
          deletions.push({ path: posix.dirname(path), opaque: true });
          return "skip";
        }
        if (base.startsWith(".wh.")) {
          deletions.push({ path: posix.join(posix.dirname(path), base.slice(4)), opaque: false });
          return "skip";
        }
        const { name: _name, ...rest } = header;
        added.push({ ...rest, path });
        if (header.type === "file" && wanted(path)) {
          charge(header.size);
          return "keep";
        }
        return "skip";
      },
      (header, body) => {
        const path = cleanPath(header.name);
        if (path) addedContents.set(path, body);
      },
    );
    for (const d of deletions) removeUnder(d.path, d.opaque);
    for (const entry of added) {
      const previous = entries.get(entry.path);
      // A file replacing a directory (or the reverse) replaces everything under it.
      if (previous && previous.type === "dir" && entry.type !== "dir") removeUnder(entry.path, false);
      entries.set(entry.path, entry);
      contents.delete(entry.path);
      const body = addedContents.get(entry.path);
      if (body) contents.set(entry.path, body);
    }
  }
  return { entries, contents };
}

/** Follows links the way a filesystem would, at most 40 hops; undefined when the chain leaves the image or loops. */
export function resolvePath(fs: Filesystem, path: string): { entry: FsEntry; path: string } | undefined {
  let current = cleanPath(path) ?? "/";
  for (let hop = 0; hop <= 40; hop++) {
    const parts = current.split("/").filter(Boolean);
    let prefix = "";
    let redirected: string | undefined;
    for (let i = 0; i < parts.length; i++) {
      prefix = `${prefix}/${parts[i]}`;
      const entry = fs.entries.get(prefix);
      const last = i === parts.length - 1;
      if (!entry) {
        if (last)
          return hasBelow(fs, prefix)
            ? { entry: { path: prefix, type: "dir", mode: 0o755, uid: 0, gid: 0, size: 0, linkname: "" }, path: prefix }
            : undefined;
        continue;
      }
      if (entry.type === "symlink") {
        const target = entry.linkname.startsWith("/") ? entry.linkname : posix.join(posix.dirname(prefix), entry.linkname);
        redirected = cleanPath(posix.join(target, ...parts.slice(i + 1)));
        break;
      }
      if (entry.type === "hardlink" && last) {
        redirected = cleanPath(entry.linkname);
        break;
      }
      if (last) return { entry, path: prefix };
    }
    if (redirected === undefined) return undefined;
    current = redirected;
  }
  return undefined;
}

function hasBelow(fs: Filesystem, dir: string): boolean {
  for (const path of fs.entries.keys()) if (path.startsWith(`${dir}/`)) return true;
  return false;
}

/** Entries strictly below `dir`. */
export function entriesUnder(fs: Filesystem, dir: string): FsEntry[] {
  const out: FsEntry[] = [];
  for (const entry of fs.entries.values()) if (entry.path !== dir && within(entry.path, dir)) out.push(entry);
  return out;
}
