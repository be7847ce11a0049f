// Whether an image digest carries a cosign signature by a trusted key: the signatures found where cosign stores them
// (the `sha256-<hex>.sig` tag, the OCI 1.1 referrers API and its tag-schema fallback), each judged by a pure function.
//
// Why not @sigstore/verify (npm, 4.1.x): it verifies Sigstore bundles (Fulcio certificates, Rekor entries, timestamps);
// a key-signed cosign image signature pushed without a transparency log (`--tlog-upload=false`) carries no bundle, only the
// simple-signing payload and its signature. @sigstore/core's `verify` is node:crypto's, without Ed25519ph, which cosign
// uses for Ed25519 image signatures. So: node:crypto for ECDSA P-256 and Ed25519, @noble/curves for Ed25519ph. Keyless
// verification (certificate chains, Rekor) is where @sigstore/verify fits, when it comes.
import { parseDocument } from "../oci/documents.js";
import { ImageReadError, isIndex, type Descriptor, type Fetched } from "../oci/source.js";
import { isSignatureShaped, signatureVerifies, type TrustedKey } from "./public-keys.js";
import {
  readSimpleSigningPayload,
  referrersTag,
  signatureAnnotation,
  signatureArtifactType,
  signatureTag,
  simpleSigningMediaType,
} from "./simple-signing.js";

/** Where cosign keeps signatures: a RegistrySource of the image's repository. */
export interface SignatureStore {
  tagged(tag: string): Promise<Fetched | undefined>;
  referrers(digest: string, artifactType: string): Promise<Fetched | undefined>;
  manifest(descriptor: Descriptor): Promise<Fetched>;
  blob(descriptor: Descriptor): Promise<AsyncIterable<Uint8Array>>;
}

/** Which of cosign's two places a signature was found in. */
export type SignatureForm = "tag" | "referrers";

/** One signature as stored: the payload's bytes and the base64 signature of its layer's annotation. */
export interface StoredSignature {
  readonly form: SignatureForm;
  /** The signature manifest's digest, for messages. */
  readonly manifest: string;
  readonly payload: Buffer;
  readonly signature: string;
}

/** What one signature proves about `digest`. */
export type SignatureJudgement =
  | { readonly kind: "verified"; readonly key: TrustedKey }
  | { readonly kind: "invalid"; readonly problem: string }
  | { readonly kind: "unknown-key" };

/** The outcome of a verification, one kind per reason of the ImageVerified condition. */
export type VerificationOutcome =
  | { readonly kind: "verified"; readonly digest: string; readonly key: TrustedKey; readonly form: SignatureForm }
  | { readonly kind: "missing"; readonly digest: string }
  | { readonly kind: "invalid"; readonly digest: string; readonly problems: readonly string[] }
  | { readonly kind: "unknown-key"; readonly digest: string; readonly signatures: number }
  | { readonly kind: "unreachable"; readonly digest: string | undefined; readonly problem: string };

/** A payload larger than this is no cosign simple-signing document. */
const maxPayloadBytes = 64 * 1024;
/** At most this many signature manifests are read for one image: a registry cannot make the manager read without end. */
const maxSignatureManifests = 32;

/** What `stored` proves about `digest` with `keys`. Pure. */
export function judgeSignature(stored: StoredSignature, digest: string, keys: readonly TrustedKey[]): SignatureJudgement {
  const reading = readSimpleSigningPayload(stored.payload);
  if (reading.problem !== undefined) return { kind: "invalid", problem: `${stored.manifest}: ${reading.problem}` };
  if (reading.claim.digest !== digest)
    return { kind: "invalid", problem: `${stored.manifest}: the payload signs ${reading.claim.digest}, not ${digest}` };
  const signature = Buffer.from(stored.signature, "base64");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(stored.signature) || !isSignatureShaped(signature))
    return { kind: "invalid", problem: `${stored.manifest}: the signature is not an ECDSA or Ed25519 signature` };
  const key = keys.find((candidate) => signatureVerifies(candidate, stored.payload, signature));
  return key ? { kind: "verified", key } : { kind: "unknown-key" };
}

/**
 * The outcome of the signatures found for `digest`: verified by the first that verifies; else a well-formed one no key verifies
 * (another key, or bytes altered after signing) is an unknown key; else every one is invalid; none at all is missing. A read
 * that failed turns a missing, invalid or unknown-key outcome into unreachable: the signature may be behind it. Pure.
 */
export function verificationOutcome(
  digest: string,
  found: Pick<FoundSignatures, "signatures" | "broken" | "readProblem">,
  keys: readonly TrustedKey[],
): VerificationOutcome {
  const { signatures, readProblem } = found;
  const problems: string[] = [...found.broken];
  let unknown = 0;
  for (const stored of signatures) {
    const judgement = judgeSignature(stored, digest, keys);
    if (judgement.kind === "verified") return { kind: "verified", digest, key: judgement.key, form: stored.form };
    if (judgement.kind === "invalid") problems.push(judgement.problem);
    else unknown++;
  }
  if (readProblem !== undefined) return { kind: "unreachable", digest, problem: readProblem };
  if (unknown > 0) return { kind: "unknown-key", digest, signatures: unknown };
  if (problems.length > 0) return { kind: "invalid", digest, problems };
  return { kind: "missing", digest };
}

export interface FoundSignatures {
  readonly signatures: StoredSignature[];
  /** Signature documents that are broken (not JSON, bytes not matching their digest, a payload too large). */
  readonly broken: string[];
  /** What could not be read (the registry unreachable, access refused), joined; undefined when everything was read. */
  readonly readProblem: string | undefined;
}

/** The signatures stored for `digest` in both forms, the broken ones, and what could not be read. */
export async function findSignatures(store: SignatureStore, digest: string): Promise<FoundSignatures> {
  const signatures: StoredSignature[] = [];
  const broken: string[] = [];
  const problems: string[] = [];
  const collect = async (form: SignatureForm, find: () => Promise<Fetched[]>) => {
    try {
      for (const manifest of (await find()).slice(0, maxSignatureManifests))
        signatures.push(...(await signaturesOf(store, form, manifest)));
    } catch (error) {
      if (!(error instanceof ImageReadError)) throw error;
      (error.failure === "invalid" ? broken : problems).push(error.message);
    }
  };
  await collect("tag", async () => {
    const tagged = await store.tagged(signatureTag(digest));
    return tagged ? [tagged] : [];
  });
  await collect("referrers", () => referrerManifests(store, digest));
  return { signatures, broken, readProblem: problems.length > 0 ? problems.join("; ") : undefined };
}

/** The signature manifests whose subject is `digest`: from the referrers API, else from the referrers tag schema's index. */
async function referrerManifests(store: SignatureStore, digest: string): Promise<Fetched[]> {
  const index = (await store.referrers(digest, signatureArtifactType)) ?? (await store.tagged(referrersTag(digest)));
  if (!index || !isIndex(index.mediaType)) return [];
  const descriptors = descriptorsOf(parseDocument(index.bytes, `referrers of ${digest}`), "manifests").filter(
    (descriptor) => (descriptor as Descriptor & { artifactType?: string }).artifactType === signatureArtifactType,
  );
  const manifests: Fetched[] = [];
  for (const descriptor of descriptors.slice(0, maxSignatureManifests)) manifests.push(await store.manifest(descriptor));
  return manifests;
}

/** The simple-signing layers of one signature manifest, each with its payload read (digest-checked) and its signature. */
async function signaturesOf(store: SignatureStore, form: SignatureForm, manifest: Fetched): Promise<StoredSignature[]> {
  const layers = descriptorsOf(parseDocument(manifest.bytes, `signature manifest ${manifest.digest}`), "layers").filter(
    (layer) => layer.mediaType === simpleSigningMediaType,
  );
  const found: StoredSignature[] = [];
  for (const layer of layers.slice(0, maxSignatureManifests)) {
    const signature = layer.annotations?.[signatureAnnotation];
    if (typeof signature !== "string" || layer.size > maxPayloadBytes) continue;
    found.push({ form, manifest: manifest.digest, payload: await readPayload(store, layer), signature });
  }
  return found;
}

/** The well-formed descriptors of a document's `layers` or `manifests`: a registry may serve anything there. */
function descriptorsOf(document: unknown, field: "layers" | "manifests"): Descriptor[] {
  const list = document !== null && typeof document === "object" ? (document as Record<string, unknown>)[field] : undefined;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (entry): entry is Descriptor =>
      entry !== null &&
      typeof entry === "object" &&
      typeof (entry as Descriptor).mediaType === "string" &&
      typeof (entry as Descriptor).digest === "string" &&
      /^sha256:[0-9a-f]{64}$/.test((entry as Descriptor).digest) &&
      typeof (entry as Descriptor).size === "number",
  );
}

async function readPayload(store: SignatureStore, layer: Descriptor): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of await store.blob(layer)) {
    size += chunk.length;
    if (size > maxPayloadBytes) throw new ImageReadError(`signature payload ${layer.digest} is larger than ${maxPayloadBytes} bytes`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/**
 * Verifies the image `root` (the manifest or index its reference names; signatures sign its digest) against `keys`.
 * A registry that cannot be read is an unreachable outcome, never an exception.
 */
export async function verifyImageSignature(
  store: SignatureStore,
  root: () => Promise<Fetched>,
  keys: readonly TrustedKey[],
): Promise<VerificationOutcome> {
  let digest: string | undefined;
  try {
    digest = (await root()).digest;
    return verificationOutcome(digest, await findSignatures(store, digest), keys);
  } catch (error) {
    if (!(error instanceof ImageReadError)) throw error;
    return { kind: "unreachable", digest, problem: error.message };
  }
}
