// Reading module images over the OCI distribution API, and the image labels the contract defines:
// shared by tfcapi-lint and the manager's TerraformMachineTemplate controller.
export { parseDocument, readJsonBlob } from "./documents.js";
export type { ManifestDocument } from "./documents.js";
export { capacityLabel, nodeInfoLabel, variablesSchemaLabel, architectures, parseCapacityLabel, parseNodeInfoLabel } from "./labels.js";
export type { LabelReading, NodeInfo } from "./labels.js";
export { hostArchitecture, imageArchitectures } from "./platforms.js";
export type { ImageArchitecture } from "./platforms.js";
export { imageReferenceName, splitImageReference, imageReferenceProblem, parseRegistryReference, isLoopback } from "./reference.js";
export type { RegistryReference, ImageReferenceParts } from "./reference.js";
export {
  answerChallenge,
  dockerConfigAuths,
  credentialsFromAuths,
  findCredentials,
  parseChallenge,
  RegistrySource,
} from "./registry-client.js";
export type { ChallengeOptions, ChallengeRefusal, RegistryOptions, Credentials, DockerAuths } from "./registry-client.js";
export {
  ImageReferenceError,
  ImageReadError,
  mediaTypes,
  isIndex,
  isManifest,
  sha256,
  verifyDigest,
  verifiedStream,
  documentMediaType,
} from "./source.js";
export type { Platform, Descriptor, Fetched, ImageSource, ImageReadFailure } from "./source.js";
