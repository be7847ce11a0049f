// cosign's signed document: the "simple signing" payload (containers/image's format, as cosign writes it), and
// where cosign stores its signatures in a registry (sigstore/cosign specs/SIGNATURE_SPEC.md).

/** The media type of a signature layer: its blob is the payload, its annotation the signature. */
export const simpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json";
/** The layer annotation holding the base64 signature of the payload. */
export const signatureAnnotation = "dev.cosignproject.cosign/signature";
/** The artifactType of a signature manifest cosign pushes as an OCI 1.1 referrer of the image. */
export const signatureArtifactType = "application/vnd.dev.cosign.artifact.sig.v1+json";
const payloadType = "cosign container image signature";

/** The legacy tag cosign keeps an image's signatures under: `sha256-<hex>.sig`. */
export function signatureTag(digest: string): string {
  return `${digest.replace(":", "-")}.sig`;
}

/** The referrers tag schema's tag (OCI 1.1, for registries without the referrers API): `sha256-<hex>`. */
export function referrersTag(digest: string): string {
  return digest.replace(":", "-");
}

export interface SimpleSigningClaim {
  /** `critical.image.docker-manifest-digest`: the digest the signer signed. */
  readonly digest: string;
  /** `critical.identity.docker-reference`: the repository the signer named (informative; cosign does not check it). */
  readonly reference: string | undefined;
}

/** What a payload claims, or why it is not a cosign simple-signing document. */
export type SimpleSigningReading = { claim: SimpleSigningClaim; problem?: undefined } | { claim?: undefined; problem: string };

export function readSimpleSigningPayload(payload: Buffer): SimpleSigningReading {
  let document: unknown;
  try {
    document = JSON.parse(payload.toString("utf8"));
  } catch {
    return { problem: "the payload is not JSON" };
  }
  const critical = field(document, "critical");
  if (field(critical, "type") !== payloadType) return { problem: `the payload's critical.type is not "${payloadType}"` };
  const digest = field(field(critical, "image"), "docker-manifest-digest");
  if (typeof digest !== "string" || !/^sha256:[0-9a-f]{64}$/.test(digest))
    return { problem: "the payload has no critical.image.docker-manifest-digest sha256 digest" };
  const reference = field(field(critical, "identity"), "docker-reference");
  return { claim: { digest, reference: typeof reference === "string" ? reference : undefined } };
}

function field(value: unknown, name: string): unknown {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>)[name] : undefined;
}
