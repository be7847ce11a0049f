import { createDecipheriv, createHash, pbkdf2, type CipherGCMTypes } from "node:crypto";
import { defaultStateEncryptionSecretKey } from "../api/workspace.js";
import {
  assembleStateDocument,
  defaultStateLimits,
  isEncryptedStateDocument,
  stateFromDocument,
  unreadable,
  type StateLimits,
  type StateReading,
  type StateSecret,
} from "./decode-state.js";

/**
 * Reading OpenTofu's encrypted state (https://opentofu.org/docs/language/state/encryption/) with
 * the key material the runtime got through TF_ENCRYPTION: the `pbkdf2` key provider, the `aes_gcm`
 * method with a provider's key or a literal one, and the `fallback` chain of key rotation. captf
 * only decrypts; tofu writes. No message here ever holds a passphrase, a key or state content.
 */

/** Where a method's key comes from: a passphrase through the envelope's PBKDF2 metadata, or the key itself. */
export type StateKeySource =
  | { kind: "pbkdf2"; provider: string; passphrase: string }
  | { kind: "raw"; key: Buffer }
  | { kind: "unusable"; reason: string };

/** One method of the `state` block's chain, in the order tofu tries them: the method, then each fallback. */
export type StateDecryptionMethod =
  | { address: string; kind: "aes_gcm"; key: StateKeySource; aad?: Buffer }
  | { address: string; kind: "unencrypted" }
  | { address: string; kind: "unsupported"; reason: string };

export interface StateDecryption {
  methods: StateDecryptionMethod[];
}

export type StateDecryptionParse = { kind: "ok"; decryption: StateDecryption } | { kind: "invalid"; message: string };

/** OpenTofu's envelope version, the only one it writes. */
export const encryptionVersion = "v0";
const aesKeyLengths = new Set([16, 24, 32]);
const gcmNonceBytes = 12;
const gcmTagBytes = 16;
const pbkdf2HashFunctions = new Set(["sha256", "sha512"]);
/** Iterations above this in an envelope's metadata are refused: whoever can write the state must not stall the manager. */
export const maxPbkdf2Iterations = 10_000_000;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A block in HCL's JSON syntax: an object, or an array holding one. */
function block(value: unknown): Json | undefined {
  if (Array.isArray(value)) return value.length === 1 && isObject(value[0]) ? value[0] : undefined;
  return isObject(value) ? value : undefined;
}

/** Bytes written as a list of numbers 0-255, as HCL passes []byte. */
function byteList(value: unknown): Buffer | undefined {
  if (!Array.isArray(value) || !value.every((byte) => Number.isInteger(byte) && byte >= 0 && byte <= 255)) return undefined;
  return Buffer.from(value as number[]);
}

const traversalPattern = /^[a-z_][a-z0-9_-]*\.[a-z_][a-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_-]*$/;

function keySource(keys: unknown, providers: Json): StateKeySource | string {
  if (typeof keys === "string") {
    if (!traversalPattern.test(keys) || !keys.startsWith("key_provider."))
      return "keys must name a key provider (key_provider.<type>.<name>)";
    const [, type, name] = keys.split(".") as [string, string, string];
    const config = block(block(providers[type])?.[name]);
    if (!config) return `keys names ${keys}, which is not configured`;
    if (type !== "pbkdf2") return { kind: "unusable", reason: `captf reads the pbkdf2 key provider, not ${type}` };
    if ("chain" in config) return { kind: "unusable", reason: "captf does not read a chained pbkdf2 key provider" };
    if (typeof config.passphrase !== "string" || config.passphrase === "") return `${keys} has no passphrase`;
    return { kind: "pbkdf2", provider: keys, passphrase: config.passphrase };
  }
  const literal = block(keys);
  if (!literal) return "keys must be a key provider reference or an object with encryption_key";
  for (const key of [literal.encryption_key, literal.decryption_key]) {
    const bytes = byteList(key);
    if (key !== undefined && (!bytes || !aesKeyLengths.has(bytes.length))) return "a literal key must be a list of 16, 24 or 32 bytes";
  }
  const key = byteList(literal.decryption_key);
  // tofu decrypts with decryption_key alone: encryption_key by itself writes state that no later run can read.
  return key ? { kind: "raw", key } : { kind: "unusable", reason: "its literal keys have no decryption_key" };
}

function decryptionMethod(reference: unknown, methods: Json, providers: Json): StateDecryptionMethod | string {
  if (typeof reference !== "string" || !traversalPattern.test(reference) || !reference.startsWith("method.")) {
    return "a state method must name a method (method.<type>.<name>)";
  }
  const [, type, name] = reference.split(".") as [string, string, string];
  const config = block(block(methods[type])?.[name]);
  if (!config) return `${reference} is not configured`;
  if (type === "unencrypted") return { address: reference, kind: "unencrypted" };
  if (type !== "aes_gcm") return { address: reference, kind: "unsupported", reason: `captf reads the aes_gcm method, not ${type}` };
  const key = keySource(config.keys, providers);
  if (typeof key === "string") return `${reference}: ${key}`;
  if (config.aad === undefined) return { address: reference, kind: "aes_gcm", key };
  const aad = byteList(config.aad);
  return aad ? { address: reference, kind: "aes_gcm", key, aad } : `${reference}: aad must be a list of bytes`;
}

/**
 * Parses the value of TF_ENCRYPTION in OpenTofu's JSON form (references are bare strings such as
 * "key_provider.pbkdf2.main") into the methods that may decrypt a state, primary first. The HCL
 * form is for tofu alone: captf reads JSON.
 */
export function parseStateEncryption(text: string): StateDecryptionParse {
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the input, which holds the key material.
    return { kind: "invalid", message: "the encryption configuration is not JSON; captf reads TF_ENCRYPTION in OpenTofu's JSON form" };
  }
  const root = block(config);
  const state = root ? block(root.state) : undefined;
  if (!root || !state) return { kind: "invalid", message: "the encryption configuration has no state block" };
  const methods = block(root.method) ?? {};
  const providers = block(root.key_provider) ?? {};
  const chain: StateDecryptionMethod[] = [];
  const seen = new Set<unknown>();
  for (let link: Json | undefined = state; link; link = block(link.fallback)) {
    if (seen.has(link) || chain.length > 16) return { kind: "invalid", message: "the state block's fallback chain is too deep" };
    seen.add(link);
    if (link.method === undefined) continue;
    const method = decryptionMethod(link.method, methods, providers);
    if (typeof method === "string") return { kind: "invalid", message: `the encryption configuration is invalid: ${method}` };
    chain.push(method);
  }
  return { kind: "ok", decryption: { methods: chain } };
}

/** The decryption a Secret's key holds (`data` base64, as the API serves it): what the Job gets as TF_ENCRYPTION. */
export function stateDecryptionFromSecret(
  secretName: string,
  data: Record<string, string> | undefined,
  key: string = defaultStateEncryptionSecretKey,
): StateDecryptionParse {
  const value = data?.[key];
  if (value === undefined) return { kind: "invalid", message: `Secret ${secretName} has no key ${key}` };
  const parsed = parseStateEncryption(Buffer.from(value, "base64").toString("utf8"));
  return parsed.kind === "ok" ? parsed : { kind: "invalid", message: `Secret ${secretName} key ${key}: ${parsed.message}` };
}

/** PBKDF2 parameters tofu records per key provider in the envelope's `meta`. */
export interface Pbkdf2Metadata {
  salt: Buffer;
  iterations: number;
  hashFunction: "sha256" | "sha512";
  keyLength: number;
}

/** A provider's metadata: base64 of a JSON object (what tofu writes), or the object itself. */
export function pbkdf2Metadata(meta: unknown, provider: string): Pbkdf2Metadata | string {
  if (!isObject(meta) || meta[provider] === undefined) return `the state carries no metadata for ${provider}`;
  let entry: unknown = meta[provider];
  if (typeof entry === "string") {
    try {
      entry = JSON.parse(Buffer.from(entry, "base64").toString("utf8"));
    } catch {
      return `the metadata for ${provider} is not base64 JSON`;
    }
  }
  if (!isObject(entry)) return `the metadata for ${provider} is not an object`;
  const { salt, iterations, hash_function: hashFunction, key_length: keyLength } = entry;
  if (typeof salt !== "string" || salt === "") return `the metadata for ${provider} has no salt`;
  if (!Number.isSafeInteger(iterations) || (iterations as number) < 1 || (iterations as number) > maxPbkdf2Iterations) {
    return `the metadata for ${provider} asks for ${JSON.stringify(iterations)} iterations; captf derives with 1 to ${maxPbkdf2Iterations}`;
  }
  if (typeof hashFunction !== "string" || !pbkdf2HashFunctions.has(hashFunction)) {
    return `the metadata for ${provider} names an unknown hash function`;
  }
  if (typeof keyLength !== "number" || !aesKeyLengths.has(keyLength))
    return `the metadata for ${provider} asks for a key of ${keyLength} bytes`;
  return {
    salt: Buffer.from(salt, "base64"),
    iterations: iterations as number,
    hashFunction: hashFunction as Pbkdf2Metadata["hashFunction"],
    keyLength,
  };
}

/** Derives a PBKDF2 key; injected so tests can count derivations. */
export type DeriveKey = (passphrase: string, metadata: Pbkdf2Metadata) => Promise<Buffer>;

const derivedKeys = new Map<string, Promise<Buffer>>();
/** Derived keys kept: one per salt, and tofu writes a new salt with each state. */
const maxDerivedKeys = 64;

/**
 * PBKDF2 on libuv's thread pool (600 000 rounds of SHA-512, tofu's default, take over a second),
 * remembered per passphrase and salt: a state is derived for once, not on every pass.
 */
export const derivePbkdf2Key: DeriveKey = (passphrase, metadata) => {
  const id = createHash("sha256")
    .update(JSON.stringify([passphrase, metadata.salt.toString("base64"), metadata.iterations, metadata.hashFunction, metadata.keyLength]))
    .digest("hex");
  const known = derivedKeys.get(id);
  if (known) return known;
  const derived = new Promise<Buffer>((resolve, reject) => {
    pbkdf2(passphrase, metadata.salt, metadata.iterations, metadata.keyLength, metadata.hashFunction, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
  derived.catch(() => derivedKeys.delete(id));
  if (derivedKeys.size >= maxDerivedKeys) derivedKeys.delete(derivedKeys.keys().next().value!);
  derivedKeys.set(id, derived);
  return derived;
};

/** AES-GCM as tofu seals it: a 12-byte nonce, the ciphertext, a 16-byte tag. Undefined when authentication fails. */
export function openAesGcm(key: Buffer, sealed: Buffer, aad?: Buffer): Buffer | undefined {
  if (!aesKeyLengths.has(key.length) || sealed.length < gcmNonceBytes + gcmTagBytes) return undefined;
  try {
    const algorithm = `aes-${key.length * 8}-gcm` as CipherGCMTypes;
    const decipher = createDecipheriv(algorithm, key, sealed.subarray(0, gcmNonceBytes), { authTagLength: gcmTagBytes });
    decipher.setAuthTag(sealed.subarray(sealed.length - gcmTagBytes));
    if (aad) decipher.setAAD(aad);
    return Buffer.concat([decipher.update(sealed.subarray(gcmNonceBytes, sealed.length - gcmTagBytes)), decipher.final()]);
  } catch {
    return undefined;
  }
}

export type StateDecryptionResult = { kind: "ok"; json: Buffer } | { kind: "failed"; message: string };

/** Decrypts OpenTofu's envelope with the first method of the chain that opens it, as tofu does on read. */
export async function decryptStateEnvelope(
  envelope: Json,
  decryption: StateDecryption,
  derive: DeriveKey = derivePbkdf2Key,
): Promise<StateDecryptionResult> {
  if (envelope.encryption_version !== encryptionVersion) {
    return {
      kind: "failed",
      message: `its encryption_version is ${JSON.stringify(envelope.encryption_version)}; captf reads ${encryptionVersion}`,
    };
  }
  if (typeof envelope.encrypted_data !== "string") return { kind: "failed", message: "its encrypted_data is not base64" };
  const sealed = Buffer.from(envelope.encrypted_data, "base64");
  if (decryption.methods.length === 0) return { kind: "failed", message: "the encryption configuration names no state method" };
  const failures: string[] = [];
  for (const method of decryption.methods) {
    if (method.kind !== "aes_gcm") {
      failures.push(`${method.address}: ${method.kind === "unencrypted" ? "does not decrypt" : method.reason}`);
      continue;
    }
    let key: Buffer;
    if (method.key.kind === "unusable") {
      failures.push(`${method.address}: ${method.key.reason}`);
      continue;
    } else if (method.key.kind === "raw") {
      key = method.key.key;
    } else {
      const metadata = pbkdf2Metadata(envelope.meta, method.key.provider);
      if (typeof metadata === "string") {
        failures.push(`${method.address}: ${metadata}`);
        continue;
      }
      try {
        key = await derive(method.key.passphrase, metadata);
      } catch {
        failures.push(`${method.address}: PBKDF2 failed`);
        continue;
      }
    }
    const json = openAesGcm(key, sealed, method.aad);
    if (json) return { kind: "ok", json };
    failures.push(`${method.address}: the key does not open it`);
  }
  return { kind: "failed", message: `no configured method decrypts it (${failures.join("; ")})` };
}

/**
 * decodeStateSecrets, plus decryption of OpenTofu's encrypted state with the given configuration.
 * Without one (or when it fails) encrypted state stays StateEncrypted, as in the reference.
 */
export async function decodeStateSecretsWithDecryption(
  suffix: string,
  secrets: readonly StateSecret[],
  decryption: StateDecryption | undefined,
  limits: StateLimits = defaultStateLimits,
  derive: DeriveKey = derivePbkdf2Key,
): Promise<StateReading> {
  const assembled = assembleStateDocument(suffix, secrets, limits);
  if (assembled.kind !== "document") return assembled;
  if (!decryption || !isEncryptedStateDocument(assembled.document)) return stateFromDocument(assembled);
  const { baseName } = assembled;
  const decrypted = await decryptStateEnvelope(assembled.document, decryption, derive);
  if (decrypted.kind === "failed") return unreadable("StateEncrypted", `the state in ${baseName} is encrypted and ${decrypted.message}`);
  if (decrypted.json.length > limits.maxDecompressedBytes) {
    return unreadable("StateTooLarge", `the state is larger than ${limits.maxDecompressedBytes} bytes decrypted`);
  }
  let document: unknown;
  try {
    document = JSON.parse(decrypted.json.toString("utf8"));
  } catch {
    document = undefined;
  }
  if (!isObject(document) || isEncryptedStateDocument(document)) {
    return unreadable("StateCorrupt", `the decrypted state in ${baseName} is not a JSON state`);
  }
  return stateFromDocument({ ...assembled, document, bytes: decrypted.json.length });
}
