/**
 * spec.stateEncryption's Secret: the key holding TF_ENCRYPTION, read live (every Job gets it by reference, the state reader
 * decrypts with it). Read by an object's own pass and by the machines and pools of an encrypting TerraformCluster, which read its
 * exports from its state. No message here holds the configuration's value.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { defaultStateEncryptionSecretKey, type StateEncryption } from "../api/workspace.js";
import { undefinedIfNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { stateDecryptionFromSecret, type StateDecryption } from "./state-encryption.js";

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
