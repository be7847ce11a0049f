// Where an image's manifests and blobs come from: a registry, an OCI layout directory or an OCI
// archive. Every byte is checked against its digest.
import { createHash } from "node:crypto";

export interface Platform {
  readonly os: string;
  readonly architecture: string;
  readonly variant?: string;
}

export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly platform?: Platform;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** A manifest or index as fetched: its bytes, media type and digest. */
export interface Fetched {
  readonly mediaType: string;
  readonly digest: string;
  readonly bytes: Buffer;
}

export interface ImageSource {
  /** The manifest or index the reference names. */
  root(): Promise<Fetched>;
  manifest(descriptor: Descriptor): Promise<Fetched>;
  /** A blob's bytes, streamed; the digest is checked when the stream ends. */
  blob(descriptor: Descriptor): Promise<AsyncIterable<Uint8Array>>;
}

/** The reference cannot be parsed or names nothing: a usage error (exit 3). */
export class ImageReferenceError extends Error {}

/** Why an image could not be read, as a metric label. */
export type ImageReadFailure = "unreachable" | "unauthorized" | "not_found" | "invalid";

/** The image cannot be read: exit 2. */
export class ImageReadError extends Error {
  constructor(
    message: string,
    readonly failure: ImageReadFailure = "invalid",
  ) {
    super(message);
  }
}

export const mediaTypes = {
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
} as const;

export function isIndex(mediaType: string): boolean {
  return mediaType === mediaTypes.ociIndex || mediaType === mediaTypes.dockerList;
}

export function isManifest(mediaType: string): boolean {
  return mediaType === mediaTypes.ociManifest || mediaType === mediaTypes.dockerManifest;
}

export function sha256(bytes: Buffer): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** Throws when `bytes` do not hash to `digest` (sha256 only). */
export function verifyDigest(bytes: Buffer, digest: string, what: string): void {
  if (!digest.startsWith("sha256:")) throw new ImageReadError(`${what}: unsupported digest algorithm in ${digest}`);
  if (sha256(bytes) !== digest) throw new ImageReadError(`${what}: content does not match digest ${digest}`);
}

/** Hashes a stream as it passes and fails at its end if the digest does not match. */
export async function* verifiedStream(stream: AsyncIterable<Uint8Array>, digest: string, what: string): AsyncIterable<Uint8Array> {
  const hash = createHash("sha256");
  for await (const chunk of stream) {
    hash.update(chunk);
    yield chunk;
  }
  if (`sha256:${hash.digest("hex")}` !== digest) throw new ImageReadError(`${what}: content does not match digest ${digest}`);
}

/** The media type of a manifest document: its own field, else the one it was served or listed with. */
export function documentMediaType(bytes: Buffer, fallback: string): string {
  try {
    const parsed = JSON.parse(bytes.toString("utf8")) as { mediaType?: unknown; manifests?: unknown };
    if (typeof parsed.mediaType === "string" && parsed.mediaType !== "") return parsed.mediaType;
    if (Array.isArray(parsed.manifests)) return mediaTypes.ociIndex;
  } catch {
    // Not JSON: reported by the caller that parses it.
  }
  return fallback;
}
