// cosign signatures of module images, checked against an administrator's public keys: shared by the manager's
// signature policies and tfcapi-lint's `image --key`.
export { readPublicKey, signatureVerifies, isSignatureShaped } from "./public-keys.js";
export type { KeyAlgorithm, TrustedKey, PublicKeyReading } from "./public-keys.js";
export {
  readSimpleSigningPayload,
  referrersTag,
  signatureAnnotation,
  signatureArtifactType,
  signatureTag,
  simpleSigningMediaType,
} from "./simple-signing.js";
export type { SimpleSigningClaim, SimpleSigningReading } from "./simple-signing.js";
export { findSignatures, judgeSignature, verificationOutcome, verifyImageSignature } from "./verify-image.js";
export type {
  FoundSignatures,
  SignatureForm,
  SignatureJudgement,
  SignatureStore,
  StoredSignature,
  VerificationOutcome,
} from "./verify-image.js";
