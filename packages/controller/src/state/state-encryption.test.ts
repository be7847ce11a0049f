import { createCipheriv, pbkdf2Sync, randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "@jest/globals";
import { decodeStateSecrets } from "./decode-state.js";
import {
  decodeStateSecretsWithDecryption,
  decryptStateEnvelope,
  maxPbkdf2Iterations,
  parseStateEncryption,
  stateDecryptionFromSecret,
  type DeriveKey,
  type StateDecryption,
} from "./state-encryption.js";

// Envelopes sealed here the way tofu seals them (its source: internal/encryption); the
// integration suite reads ones real OpenTofu wrote.
const suffix = "0123456789abcdef-m";
const baseName = `tfstate-default-${suffix}`;
const canary = "canary-passphrase-7f3a9c21";
const otherPassphrase = "another-passphrase-0b8e44d1";
const state = {
  version: 4,
  terraform_version: "1.12.6",
  serial: 5,
  lineage: "lin-1",
  outputs: { ip: { value: "10.0.0.9" } },
  resources: [],
};
const fewIterations = 1000;

function seal(key: Buffer, plaintext: Buffer, aad?: Buffer): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv(`aes-${key.length * 8}-gcm` as "aes-256-gcm", key, nonce);
  if (aad) cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

function pbkdf2Envelope(passphrase: string, provider = "key_provider.pbkdf2.main", plaintext = JSON.stringify(state)) {
  const salt = randomBytes(32);
  const key = pbkdf2Sync(passphrase, salt, fewIterations, 32, "sha512");
  const meta = { salt: salt.toString("base64"), iterations: fewIterations, hash_function: "sha512", key_length: 32 };
  return {
    serial: 5,
    lineage: "lin-1",
    meta: { [provider]: Buffer.from(JSON.stringify(meta)).toString("base64") },
    encrypted_data: seal(key, Buffer.from(plaintext)).toString("base64"),
    encryption_version: "v0",
  };
}

function passphraseConfig(primary: string, fallback?: string): string {
  return JSON.stringify({
    key_provider: { pbkdf2: { new: { passphrase: primary }, ...(fallback ? { main: { passphrase: fallback } } : {}) } },
    method: { aes_gcm: { new: { keys: "key_provider.pbkdf2.new" }, ...(fallback ? { old: { keys: "key_provider.pbkdf2.main" } } : {}) } },
    state: { method: "method.aes_gcm.new", ...(fallback ? { fallback: { method: "method.aes_gcm.old" } } : {}) },
  });
}

function parsed(text: string): StateDecryption {
  const result = parseStateEncryption(text);
  if (result.kind !== "ok") throw new Error(result.message);
  return result.decryption;
}

const secretOf = (document: unknown) => [{ name: baseName, data: { tfstate: gzipSync(JSON.stringify(document)).toString("base64") } }];

describe("parseStateEncryption", () => {
  it("lists the state method, then each fallback, in tofu's order", () => {
    expect(parsed(passphraseConfig(otherPassphrase, canary)).methods).toEqual([
      {
        address: "method.aes_gcm.new",
        kind: "aes_gcm",
        key: { kind: "pbkdf2", provider: "key_provider.pbkdf2.new", passphrase: otherPassphrase },
      },
      { address: "method.aes_gcm.old", kind: "aes_gcm", key: { kind: "pbkdf2", provider: "key_provider.pbkdf2.main", passphrase: canary } },
    ]);
  });

  it("reads a literal key (the decryption_key), aad, and an unencrypted migration method", () => {
    const key = [...Array(32).keys()];
    const decryption = parsed(
      JSON.stringify({
        method: {
          aes_gcm: { raw: { keys: { encryption_key: key.map((b) => 255 - b), decryption_key: key }, aad: [1, 2] } },
          unencrypted: { u: {} },
        },
        state: { method: "method.unencrypted.u", fallback: [{ method: "method.aes_gcm.raw" }] },
      }),
    );
    expect(decryption.methods).toEqual([
      { address: "method.unencrypted.u", kind: "unencrypted" },
      { address: "method.aes_gcm.raw", kind: "aes_gcm", key: { kind: "raw", key: Buffer.from(key) }, aad: Buffer.from([1, 2]) },
    ]);
  });

  it("keeps key providers it cannot read as unsupported rather than refusing the configuration", () => {
    const decryption = parsed(
      JSON.stringify({
        key_provider: { aws_kms: { k: { kms_key_id: "alias/x" } } },
        method: { aes_gcm: { m: { keys: "key_provider.aws_kms.k" } } },
        state: { method: "method.aes_gcm.m" },
      }),
    );
    expect(decryption.methods[0]).toMatchObject({ kind: "aes_gcm", key: { kind: "unusable", reason: /not aws_kms/ } });
  });

  it.each([
    ["HCL (not JSON)", `key_provider "pbkdf2" "main" { passphrase = "${canary}" }`, /not JSON/],
    ["no state block", JSON.stringify({ key_provider: { pbkdf2: { main: { passphrase: canary } } } }), /no state block/],
    [
      "a ${} template as reference",
      passphraseConfig(canary).replace('"method.aes_gcm.new"', '"${method.aes_gcm.new}"'),
      /must name a method/,
    ],
    [
      "an unknown method",
      passphraseConfig(canary).replace('"method.aes_gcm.new"', '"method.aes_gcm.nope"'),
      /method.aes_gcm.nope is not configured/,
    ],
    [
      "a short literal key",
      JSON.stringify({ method: { aes_gcm: { m: { keys: { encryption_key: [1, 2, 3] } } } }, state: { method: "method.aes_gcm.m" } }),
      /16, 24 or 32/,
    ],
  ])("refuses %s, never quoting the key material", (_, text, message) => {
    const result = parseStateEncryption(text);
    expect(result).toMatchObject({ kind: "invalid", message });
    expect(JSON.stringify(result)).not.toContain(canary);
  });
});

describe("stateDecryptionFromSecret", () => {
  it("reads TF_ENCRYPTION (or the named key) from the Secret's data and names the Secret, never the value, when it cannot", () => {
    const data = {
      TF_ENCRYPTION: Buffer.from(passphraseConfig(canary)).toString("base64"),
      hcl: Buffer.from(`passphrase = "${canary}"`).toString("base64"),
    };
    expect(stateDecryptionFromSecret("state-key", data)).toEqual({ kind: "ok", decryption: parsed(passphraseConfig(canary)) });
    const missing = stateDecryptionFromSecret("state-key", data, "other");
    expect(missing).toEqual({ kind: "invalid", message: "Secret state-key has no key other" });
    const hcl = stateDecryptionFromSecret("state-key", data, "hcl");
    expect(hcl).toMatchObject({ kind: "invalid", message: expect.stringMatching(/^Secret state-key key hcl: .*not JSON/) as unknown });
    expect(JSON.stringify(hcl)).not.toContain(canary);
  });
});

describe("decryptStateEnvelope", () => {
  it("opens a pbkdf2 envelope with the passphrase and the envelope's salt and parameters", async () => {
    const result = await decryptStateEnvelope(pbkdf2Envelope(canary, "key_provider.pbkdf2.new"), parsed(passphraseConfig(canary)));
    expect(result.kind === "ok" && JSON.parse(result.json.toString())).toEqual(state);
  });

  it("falls back to the old passphrase for state written before the rotation", async () => {
    const result = await decryptStateEnvelope(
      pbkdf2Envelope(canary, "key_provider.pbkdf2.main"),
      parsed(passphraseConfig(otherPassphrase, canary)),
    );
    expect(result).toMatchObject({ kind: "ok" });
  });

  it("opens a literal AES-256 key with its aad, and refuses a wrong aad", async () => {
    const key = randomBytes(32);
    const envelope = {
      meta: {},
      encrypted_data: seal(key, Buffer.from(JSON.stringify(state)), Buffer.from([7])).toString("base64"),
      encryption_version: "v0",
    };
    const config = (aad: number[]) =>
      JSON.stringify({
        method: { aes_gcm: { raw: { keys: { encryption_key: [...key], decryption_key: [...key] }, aad } } },
        state: { method: "method.aes_gcm.raw" },
      });
    expect(await decryptStateEnvelope(envelope, parsed(config([7])))).toMatchObject({ kind: "ok" });
    expect(await decryptStateEnvelope(envelope, parsed(config([8])))).toMatchObject({ kind: "failed", message: /does not open it/ });
  });

  it("cannot open with a literal encryption_key alone, as tofu cannot", async () => {
    const key = randomBytes(32);
    const envelope = {
      meta: {},
      encrypted_data: seal(key, Buffer.from(JSON.stringify(state))).toString("base64"),
      encryption_version: "v0",
    };
    const config = JSON.stringify({
      method: { aes_gcm: { raw: { keys: { encryption_key: [...key] } } } },
      state: { method: "method.aes_gcm.raw" },
    });
    expect(await decryptStateEnvelope(envelope, parsed(config))).toEqual({
      kind: "failed",
      message: "no configured method decrypts it (method.aes_gcm.raw: its literal keys have no decryption_key)",
    });
  });

  it("names every method's failure, never the passphrase", async () => {
    const result = await decryptStateEnvelope(
      pbkdf2Envelope(otherPassphrase, "key_provider.pbkdf2.new"),
      parsed(passphraseConfig(canary, canary)),
    );
    expect(result).toEqual({
      kind: "failed",
      message:
        "no configured method decrypts it (method.aes_gcm.new: the key does not open it; " +
        "method.aes_gcm.old: the state carries no metadata for key_provider.pbkdf2.main)",
    });
  });

  it.each([
    ["an unknown version", { encryption_version: "v9", encrypted_data: "" }, /encryption_version is "v9"/],
    ["iterations beyond the cap", { iterations: maxPbkdf2Iterations + 1 }, /iterations/],
    ["an unknown hash", { hash_function: "md5" }, /unknown hash function/],
    ["an odd key length", { key_length: 20 }, /key of 20 bytes/],
  ])("refuses %s before deriving anything", async (_, change, message) => {
    const envelope = pbkdf2Envelope(canary, "key_provider.pbkdf2.new");
    const meta = JSON.parse(Buffer.from(envelope.meta["key_provider.pbkdf2.new"]!, "base64").toString()) as Record<string, unknown>;
    const changed =
      "encryption_version" in change
        ? { ...envelope, ...change }
        : { ...envelope, meta: { "key_provider.pbkdf2.new": Buffer.from(JSON.stringify({ ...meta, ...change })).toString("base64") } };
    let derivations = 0;
    const derive: DeriveKey = async () => {
      derivations++;
      return Buffer.alloc(32);
    };
    expect(await decryptStateEnvelope(changed, parsed(passphraseConfig(canary)), derive)).toMatchObject({ kind: "failed", message });
    expect(derivations).toBe(0);
  });
});

describe("decodeStateSecretsWithDecryption", () => {
  it("reads serial, lineage and outputs of encrypted state with the key, and keeps StateEncrypted without one", async () => {
    const secrets = secretOf(pbkdf2Envelope(canary, "key_provider.pbkdf2.new"));
    const reading = await decodeStateSecretsWithDecryption(suffix, secrets, parsed(passphraseConfig(canary)));
    expect(reading).toMatchObject({ kind: "ok", state: { serial: 5, lineage: "lin-1", outputs: { ip: "10.0.0.9" } } });
    expect(await decodeStateSecretsWithDecryption(suffix, secrets, undefined)).toEqual(decodeStateSecrets(suffix, secrets));
    expect(decodeStateSecrets(suffix, secrets)).toMatchObject({ kind: "unreadable", reason: "StateEncrypted" });
  });

  it("says StateEncrypted with the reason when the key is wrong, and never holds the key", async () => {
    const reading = await decodeStateSecretsWithDecryption(
      suffix,
      secretOf(pbkdf2Envelope(otherPassphrase, "key_provider.pbkdf2.new")),
      parsed(passphraseConfig(canary)),
    );
    expect(reading).toMatchObject({
      kind: "unreadable",
      reason: "StateEncrypted",
      message: expect.stringMatching(/encrypted and no configured method decrypts it/),
    });
    expect(JSON.stringify(reading)).not.toContain(canary);
  });

  it("keeps the size limit on encrypted state and refuses a decrypted document that is not a state", async () => {
    const big = await decodeStateSecretsWithDecryption(
      suffix,
      secretOf(pbkdf2Envelope(canary, "key_provider.pbkdf2.new")),
      parsed(passphraseConfig(canary)),
      {
        maxSecrets: 32,
        maxDecompressedBytes: 100,
      },
    );
    expect(big).toMatchObject({ kind: "unreadable", reason: "StateTooLarge" });
    const notState = await decodeStateSecretsWithDecryption(
      suffix,
      secretOf(pbkdf2Envelope(canary, "key_provider.pbkdf2.new", "[1]")),
      parsed(passphraseConfig(canary)),
    );
    expect(notState).toMatchObject({ kind: "unreadable", reason: "StateCorrupt" });
  });
});
