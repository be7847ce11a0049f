// The public keys signatures are checked against (PEM, as `cosign generate-key-pair` writes cosign.pub), and
// the check of one signature's bytes: ECDSA P-256 with SHA-256 (ASN.1 DER) and Ed25519, pure or pre-hashed.
import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
import { ed25519ph } from "@noble/curves/ed25519.js";

export type KeyAlgorithm = "ecdsa-p256" | "ed25519";

export interface TrustedKey {
  /** `sha256:<hex>` of the key's DER SubjectPublicKeyInfo: the same for the same key whatever its PEM's line breaks. */
  readonly id: string;
  /** What the administrator called it, for messages and conditions. */
  readonly name: string | undefined;
  readonly algorithm: KeyAlgorithm;
  readonly key: KeyObject;
}

/** A parsed key, or why the PEM is not one that can verify cosign signatures. */
export type PublicKeyReading = { key: TrustedKey; problem?: undefined } | { key?: undefined; problem: string };

export function readPublicKey(pem: string, name?: string): PublicKeyReading {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: "pem" });
  } catch (error) {
    return { problem: `it is not a PEM public key (${(error as Error).message})` };
  }
  const algorithm = keyAlgorithm(key);
  if (!algorithm) {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    return { problem: `a ${key.asymmetricKeyType}${curve ? ` ${curve}` : ""} key: only ECDSA P-256 and Ed25519 keys are supported` };
  }
  const der = key.export({ format: "der", type: "spki" });
  return { key: { id: `sha256:${createHash("sha256").update(der).digest("hex")}`, name, algorithm, key } };
}

function keyAlgorithm(key: KeyObject): KeyAlgorithm | undefined {
  if (key.asymmetricKeyType === "ed25519") return "ed25519";
  if (key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1") return "ecdsa-p256";
  return undefined;
}

/** Whether `signature` over `payload` was made by `key`'s private key. Never throws. */
export function signatureVerifies(key: TrustedKey, payload: Buffer, signature: Buffer): boolean {
  try {
    if (key.algorithm === "ecdsa-p256") return verify("sha256", payload, { key: key.key, dsaEncoding: "der" }, signature);
    // cosign signs images with Ed25519ph (its default since hashedrekord); older cosign and sign-blob use pure Ed25519.
    if (verify(null, payload, key.key, signature)) return true;
    const raw = Buffer.from(key.key.export({ format: "jwk" }).x!, "base64url");
    return ed25519ph.verify(signature, payload, raw, { zip215: false });
  } catch {
    return false;
  }
}

/**
 * Whether `signature` is shaped like a signature of a supported algorithm: an ASN.1 DER ECDSA signature
 * (SEQUENCE of two INTEGERs) or 64 bytes of Ed25519. A signature that is not is broken, whoever signed it.
 */
export function isSignatureShaped(signature: Buffer): boolean {
  if (signature.length === 64) return true;
  return isDerEcdsaSignature(signature);
}

function isDerEcdsaSignature(bytes: Buffer): boolean {
  if (bytes.length < 8 || bytes.length > 72 || bytes[0] !== 0x30 || bytes[1] !== bytes.length - 2) return false;
  let offset = 2;
  for (let i = 0; i < 2; i++) {
    if (bytes[offset] !== 0x02) return false;
    const length = bytes[offset + 1]!;
    if (length === 0 || length > 33 || offset + 2 + length > bytes.length) return false;
    offset += 2 + length;
  }
  return offset === bytes.length;
}
