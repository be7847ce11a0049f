// Manifests, indexes and config blobs as JSON documents.
import { ImageReadError, type Descriptor, type ImageSource } from "./source.js";

export interface ManifestDocument {
  config?: Descriptor;
  layers?: Descriptor[];
  manifests?: Descriptor[];
}

export function parseDocument(bytes: Buffer, what: string): ManifestDocument {
  try {
    return JSON.parse(bytes.toString("utf8")) as ManifestDocument;
  } catch {
    throw new ImageReadError(`${what} is not JSON`);
  }
}

/** A config blob, at most 4 MiB, as JSON. */
export async function readJsonBlob(source: ImageSource, descriptor: Descriptor): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of await source.blob(descriptor)) {
    size += chunk.length;
    if (size > 4 * 1024 * 1024) throw new ImageReadError(`config blob ${descriptor.digest} is larger than 4 MiB`);
    chunks.push(Buffer.from(chunk));
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new ImageReadError(`config blob ${descriptor.digest} is not JSON`);
  }
}
