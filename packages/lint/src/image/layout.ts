// OCI image layouts: a directory (oci:<dir>[:tag]) or a tar of one (oci-archive:<file>[:tag]).
import { closeSync, createReadStream, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  documentMediaType,
  ImageReadError,
  ImageReferenceError,
  mediaTypes,
  sha256,
  verifiedStream,
  verifyDigest,
  type Descriptor,
  type Fetched,
  type ImageSource,
} from "@captf/contract/oci";

const refName = "org.opencontainers.image.ref.name";

/** Splits `<path>[:tag]`: a final `:tag` counts when it holds no `/`. */
export function splitTag(spec: string): { path: string; tag: string | undefined } {
  const colon = spec.lastIndexOf(":");
  if (colon > 0 && !spec.slice(colon + 1).includes("/") && spec.slice(colon + 1) !== "") {
    return { path: spec.slice(0, colon), tag: spec.slice(colon + 1) };
  }
  return { path: spec, tag: undefined };
}

/** Reads blobs by digest from some store: a directory or an archive. */
interface BlobStore {
  read(path: string): Buffer | undefined;
  stream(path: string): AsyncIterable<Uint8Array> | undefined;
}

function blobPath(digest: string): string {
  const [algorithm, hex] = digest.split(":");
  if (!algorithm || !hex || !/^[a-z0-9]+$/.test(algorithm) || !/^[a-f0-9]+$/.test(hex))
    throw new ImageReadError(`invalid digest ${digest}`);
  return `blobs/${algorithm}/${hex}`;
}

class LayoutSource implements ImageSource {
  constructor(
    private readonly store: BlobStore,
    private readonly tag: string | undefined,
    private readonly display: string,
  ) {}

  async root(): Promise<Fetched> {
    const indexBytes = this.store.read("index.json");
    if (!indexBytes) throw new ImageReadError(`${this.display} has no index.json: not an OCI image layout`);
    let index: { manifests?: Descriptor[] };
    try {
      index = JSON.parse(indexBytes.toString("utf8")) as { manifests?: Descriptor[] };
    } catch {
      throw new ImageReadError(`${this.display}: index.json is not JSON`);
    }
    const manifests = index.manifests ?? [];
    if (this.tag !== undefined) {
      const match = manifests.find((m) => m.annotations?.[refName] === this.tag);
      if (!match) {
        const tags = manifests.map((m) => m.annotations?.[refName]).filter(Boolean);
        throw new ImageReferenceError(`${this.display} has no tag ${this.tag} (tags: ${tags.join(", ") || "none"})`);
      }
      return this.manifest(match);
    }
    if (manifests.length === 1) return this.manifest(manifests[0]!);
    const tagged = manifests.filter((m) => m.annotations?.[refName]);
    if (tagged.length > 1)
      throw new ImageReferenceError(
        `${this.display} holds several tags (${tagged.map((m) => m.annotations![refName]).join(", ")}): name one with :<tag>`,
      );
    // The layout's own index lists the platforms, as `podman save --format oci-dir` writes it.
    return { mediaType: mediaTypes.ociIndex, digest: sha256(indexBytes), bytes: indexBytes };
  }

  async manifest(descriptor: Descriptor): Promise<Fetched> {
    const bytes = this.store.read(blobPath(descriptor.digest));
    if (!bytes) throw new ImageReadError(`${this.display} lacks blob ${descriptor.digest}`);
    verifyDigest(bytes, descriptor.digest, `manifest ${descriptor.digest}`);
    return { mediaType: documentMediaType(bytes, descriptor.mediaType), digest: descriptor.digest, bytes };
  }

  async blob(descriptor: Descriptor): Promise<AsyncIterable<Uint8Array>> {
    const stream = this.store.stream(blobPath(descriptor.digest));
    if (!stream) throw new ImageReadError(`${this.display} lacks blob ${descriptor.digest}`);
    return verifiedStream(stream, descriptor.digest, `blob ${descriptor.digest}`);
  }
}

/** `oci:<dir>[:tag]`. */
export function layoutDirectorySource(spec: string): ImageSource {
  const { path, tag } = splitTag(spec);
  if (!existsSync(path) || !statSync(path).isDirectory()) throw new ImageReadError(`${path} is not a directory`);
  const store: BlobStore = {
    read: (p) => (existsSync(join(path, p)) ? readFileSync(join(path, p)) : undefined),
    stream: (p) => (existsSync(join(path, p)) ? createReadStream(join(path, p)) : undefined),
  };
  return new LayoutSource(store, tag, `oci:${path}`);
}

/** `oci-archive:<file>[:tag]`: one pass over the tar's headers, then ranged reads of its members. */
export function layoutArchiveSource(spec: string): ImageSource {
  const { path, tag } = splitTag(spec);
  if (!existsSync(path) || !statSync(path).isFile()) throw new ImageReadError(`${path} is not a file`);
  const members = indexArchive(path);
  const store: BlobStore = {
    read: (p) => {
      const m = members.get(p);
      if (!m) return undefined;
      const fd = openSync(path, "r");
      try {
        const buffer = Buffer.alloc(m.size);
        readSync(fd, buffer, 0, m.size, m.offset);
        return buffer;
      } finally {
        closeSync(fd);
      }
    },
    stream: (p) => {
      const m = members.get(p);
      if (!m) return undefined;
      return m.size === 0 ? (async function* () {})() : createReadStream(path, { start: m.offset, end: m.offset + m.size - 1 });
    },
  };
  return new LayoutSource(store, tag, `oci-archive:${path}`);
}

/** Regular-file members of a tar by normalized name, with their offsets. */
function indexArchive(file: string): Map<string, { offset: number; size: number }> {
  const members = new Map<string, { offset: number; size: number }>();
  const fd = openSync(file, "r");
  const total = statSync(file).size;
  try {
    const header = Buffer.alloc(512);
    let offset = 0;
    let paxPath: string | undefined;
    let longName: string | undefined;
    while (offset + 512 <= total) {
      readSync(fd, header, 0, 512, offset);
      if (header.every((b) => b === 0)) break;
      const text = (start: number, length: number): string => {
        const raw = header.subarray(start, start + length);
        const end = raw.indexOf(0);
        return raw.subarray(0, end < 0 ? length : end).toString("utf8");
      };
      const size = parseInt(text(124, 12).trim() || "0", 8);
      const flag = String.fromCharCode(header[156]!);
      const dataOffset = offset + 512;
      if (flag === "x" || flag === "L") {
        const body = Buffer.alloc(size);
        readSync(fd, body, 0, size, dataOffset);
        if (flag === "L") longName = body.toString("utf8").replace(/\0+$/, "");
        else paxPath = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString("utf8"))?.[1];
      } else {
        const prefix = header.subarray(257, 263).toString("latin1").startsWith("ustar") ? text(345, 155) : "";
        const name = paxPath ?? longName ?? (prefix ? `${prefix}/${text(0, 100)}` : text(0, 100));
        paxPath = undefined;
        longName = undefined;
        if (flag === "0" || flag === "\0" || flag === "7") members.set(name.replace(/^(\.\/)+/, ""), { offset: dataOffset, size });
      }
      offset = dataOffset + Math.ceil(size / 512) * 512;
    }
  } finally {
    closeSync(fd);
  }
  return members;
}
