/**
 * Reading a module image's labels over the registry API, never pulling it: the manifest (for an
 * index, the linux image of the manager's architecture, else the first linux one) and its config
 * blob. Credentials come from the template's imagePullSecrets.
 */
import type { V1Secret } from "@kubernetes/client-node";
import {
  credentialsFromAuths,
  dockerConfigAuths,
  ImageReadError,
  ImageReferenceError,
  isIndex,
  isManifest,
  parseDocument,
  parseRegistryReference,
  readJsonBlob,
  RegistrySource,
  type Credentials,
  type Descriptor,
  type ImageReadFailure,
} from "@captf/contract/oci";

export type ImageInspection =
  | { ok: true; labels: Readonly<Record<string, string>> }
  | { ok: false; failure: ImageReadFailure; message: string };

/** Node's process.arch as an OCI platform architecture. */
export function ociArchitecture(nodeArch: string = process.arch): string {
  return ({ x64: "amd64", ia32: "386", ppc64: "ppc64le" } as Record<string, string>)[nodeArch] ?? nodeArch;
}

/** Of an index's manifests: the linux image of `architecture`, else the first linux image. */
export function selectPlatformManifest(manifests: readonly Descriptor[], architecture: string): Descriptor | undefined {
  const linux = manifests.filter((d) => d.platform?.os === "linux" && isManifest(d.mediaType));
  return linux.find((d) => d.platform?.architecture === architecture) ?? linux[0];
}

/** The credentials for `registry` in the first pull Secret (dockerconfigjson or legacy dockercfg) that has them. */
export function pullSecretCredentials(secrets: readonly V1Secret[], registry: string): Credentials | undefined {
  for (const secret of secrets) {
    const config = secret.data?.[".dockerconfigjson"];
    const legacy = secret.data?.[".dockercfg"];
    const text = Buffer.from(config ?? legacy ?? "", "base64").toString("utf8");
    // The legacy format is the auths map itself.
    const auths =
      config !== undefined ? dockerConfigAuths(text) : legacy !== undefined ? dockerConfigAuths(`{"auths":${text}}`) : undefined;
    const found = auths && credentialsFromAuths(auths, registry);
    if (found) return found;
  }
  return undefined;
}

export interface InspectOptions {
  /** The Secrets the template's imagePullSecrets name (those that exist). */
  pullSecrets: readonly V1Secret[];
  architecture: string;
  timeoutMs?: number;
}

/** The labels of the image's config; never throws. */
export async function inspectImage(ref: string, options: InspectOptions): Promise<ImageInspection> {
  try {
    const reference = parseRegistryReference(ref);
    const credentials = pullSecretCredentials(options.pullSecrets, reference.registry);
    const source = new RegistrySource(reference, {
      insecure: false,
      credentials,
      credentialsOrigin: "the template's imagePullSecrets",
      timeoutMs: options.timeoutMs ?? 30_000,
    });
    let root = await source.root();
    if (isIndex(root.mediaType)) {
      const chosen = selectPlatformManifest(parseDocument(root.bytes, "the index").manifests ?? [], options.architecture);
      if (!chosen) throw new ImageReadError("the index has no linux image");
      root = await source.manifest(chosen);
    }
    if (!isManifest(root.mediaType)) throw new ImageReadError(`unsupported manifest media type ${JSON.stringify(root.mediaType)}`);
    const manifest = parseDocument(root.bytes, "the manifest");
    if (!manifest.config) throw new ImageReadError("the manifest has no config");
    const config = (await readJsonBlob(source, manifest.config)) as { config?: { Labels?: Record<string, string> | null } } | null;
    return { ok: true, labels: config?.config?.Labels ?? {} };
  } catch (error) {
    if (error instanceof ImageReadError) return { ok: false, failure: error.failure, message: error.message };
    if (error instanceof ImageReferenceError) return { ok: false, failure: "invalid", message: error.message };
    return { ok: false, failure: "unreachable", message: (error as Error).message };
  }
}
