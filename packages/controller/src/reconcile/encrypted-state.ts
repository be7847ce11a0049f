/**
 * spec.stateEncryption in the pass: the Secret key holding TF_ENCRYPTION is read each pass (the state
 * reader decrypts with it, every Job gets it by reference), and an object whose key is unusable runs
 * nothing. No message here holds the configuration's value.
 */
import type { StateReading } from "../state/decode-state.js";
import type { StateEncryptionFinding } from "../state/encryption-secret.js";

// Read in the state layer, where a machine's inputs (kinds/) read an encrypting cluster's exports too.
export {
  readStateEncryption,
  stateEncryptionKey,
  type StateEncryptionFinding,
  type StateEncryptionKey,
} from "../state/encryption-secret.js";

/**
 * The reading as the pass may use it: with encryption asked for and no usable key, no Job could run (its
 * TF_ENCRYPTION would be missing), so any state, even none, is unreadable; a deleting object without
 * state still lets its finalizer go. Pure.
 */
export function withStateEncryption(reading: StateReading, finding: StateEncryptionFinding, deleting: boolean): StateReading {
  if (finding.kind !== "unavailable" || (deleting && reading.kind === "absent")) return reading;
  return {
    kind: "unreadable",
    reason: "StateEncryptionKeyUnavailable",
    message: `spec.stateEncryption asks for encrypted state and its key cannot be used: ${finding.message}. Nothing runs until it can`,
  };
}
