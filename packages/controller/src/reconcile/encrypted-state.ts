/**
 * spec.stateEncryption in the pass: the Secret key holding TF_ENCRYPTION is read each pass (the state
 * reader decrypts with it, every Job gets it by reference), and an object whose key is unusable runs
 * nothing. No message here holds the configuration's value.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { defaultStateEncryptionSecretKey, type StateEncryption } from "../api/workspace.js";
import { undefinedIfNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { StateReading } from "../state/decode-state.js";
import { stateDecryptionFromSecret, type StateDecryption } from "../state/state-encryption.js";

/** The Secret key a Job gets as TF_ENCRYPTION. */
export interface StateEncryptionKey {
  secretName: string;
  key: string;
}

/** What spec.stateEncryption gives the pass: nothing asked, the decryption, or why its Secret gives none. */
export type StateEncryptionFinding =
  | { kind: "none" }
  | { kind: "ready"; ref: StateEncryptionKey; decryption: StateDecryption }
  | { kind: "unavailable"; ref: StateEncryptionKey; message: string };

/** The Secret key spec.stateEncryption names, the key defaulted. */
export function stateEncryptionKey(encryption: StateEncryption | undefined): StateEncryptionKey | undefined {
  if (!encryption) return undefined;
  return { secretName: encryption.secretRef.name, key: encryption.secretRef.key ?? defaultStateEncryptionSecretKey };
}

/** Reads the encryption Secret live (it carries no label the manager's caches select). */
export async function readStateEncryption(
  client: KubeApi,
  namespace: string,
  encryption: StateEncryption | undefined,
): Promise<StateEncryptionFinding> {
  const ref = stateEncryptionKey(encryption);
  if (!ref) return { kind: "none" };
  const secret = await undefinedIfNotFound(client.get<V1Secret>(builtinTypes.secret, namespace, ref.secretName));
  if (!secret) return { kind: "unavailable", ref, message: `Secret ${ref.secretName} (spec.stateEncryption.secretRef) does not exist` };
  const parsed = stateDecryptionFromSecret(ref.secretName, secret.data, ref.key);
  return parsed.kind === "ok"
    ? { kind: "ready", ref, decryption: parsed.decryption }
    : { kind: "unavailable", ref, message: parsed.message };
}

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
