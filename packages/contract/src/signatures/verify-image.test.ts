import { describe, expect, it } from "@jest/globals";
// The pure judgement of cosign signatures: payloads and signatures made here as cosign makes them (ECDSA P-256 over
// SHA-256 in DER, Ed25519ph); the registry reads and real cosign are in verify-image.integration.test.ts.
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { ed25519ph } from "@noble/curves/ed25519.js";
import { readPublicKey, type TrustedKey } from "./public-keys.js";
import { judgeSignature, verificationOutcome, type StoredSignature } from "./verify-image.js";

const digest = `sha256:${"a".repeat(64)}`;
const otherDigest = `sha256:${"b".repeat(64)}`;

function payloadFor(signed: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      critical: {
        identity: { "docker-reference": "127.0.0.1:5000/modules/noop" },
        image: { "docker-manifest-digest": signed },
        type: "cosign container image signature",
      },
      optional: null,
    }),
  );
}

interface Signer {
  trusted: TrustedKey;
  sign(payload: Buffer): string;
}

function ecdsaSigner(name: string): Signer {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return { trusted: trusted(publicKey, name), sign: (payload) => sign("sha256", payload, privateKey).toString("base64") };
}

function ed25519phSigner(name: string): Signer {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const secret = Buffer.from(privateKey.export({ format: "jwk" }).d!, "base64url");
  return { trusted: trusted(publicKey, name), sign: (payload) => Buffer.from(ed25519ph.sign(payload, secret)).toString("base64") };
}

function trusted(publicKey: KeyObject, name: string): TrustedKey {
  const reading = readPublicKey(publicKey.export({ format: "pem", type: "spki" }).toString(), name);
  if (!reading.key) throw new Error(reading.problem);
  return reading.key;
}

function stored(payload: Buffer, signature: string, form: StoredSignature["form"] = "tag"): StoredSignature {
  return { form, manifest: "sha256:sig", payload, signature };
}

const ecdsa = ecdsaSigner("release");
const ed = ed25519phSigner("ci");
const stranger = ecdsaSigner("stranger");

describe("judgeSignature", () => {
  it.each([
    ["an ECDSA P-256 signature by a trusted key", ecdsa],
    ["an Ed25519ph signature by a trusted key", ed],
  ])("verifies %s and names the key", (_, signer) => {
    const payload = payloadFor(digest);
    const judgement = judgeSignature(stored(payload, signer.sign(payload)), digest, [stranger.trusted, ecdsa.trusted, ed.trusted]);
    expect(judgement).toEqual({ kind: "verified", key: signer.trusted });
  });

  it("verifies a pure Ed25519 signature (older cosign, sign-blob)", () => {
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    const payload = payloadFor(digest);
    const key = trusted(publicKey, "pure");
    expect(judgeSignature(stored(payload, sign(null, payload, privateKey).toString("base64")), digest, [key]).kind).toBe("verified");
  });

  it("calls a well-formed signature no trusted key verifies an unknown key", () => {
    const payload = payloadFor(digest);
    expect(judgeSignature(stored(payload, stranger.sign(payload)), digest, [ecdsa.trusted, ed.trusted])).toEqual({ kind: "unknown-key" });
  });

  it("calls a payload altered after signing an unknown key: nothing tells it apart from another key's", () => {
    const payload = payloadFor(digest);
    const altered = Buffer.from(payload.toString().replace('"optional":null', '"optional":{"x":1}'));
    expect(judgeSignature(stored(altered, ecdsa.sign(payload)), digest, [ecdsa.trusted]).kind).toBe("unknown-key");
  });

  it.each([
    ["a payload that signs another digest", payloadFor(otherDigest), "signs sha256:bbbb"],
    ["a payload that is not JSON", Buffer.from("{not json"), "not JSON"],
    ["a payload of another type", Buffer.from(JSON.stringify({ critical: { type: "atomic container signature" } })), "critical.type"],
    ["a payload without a digest", Buffer.from(JSON.stringify({ critical: { type: "cosign container image signature" } })), "no critical"],
  ])("refuses %s as invalid, whoever signed it", (_, payload, problem) => {
    const judgement = judgeSignature(stored(payload, ecdsa.sign(payload)), digest, [ecdsa.trusted]);
    expect(judgement.kind).toBe("invalid");
    expect(judgement.kind === "invalid" && judgement.problem).toContain(problem);
  });

  it.each([
    ["not base64", "%%%not-base64%%%"],
    ["too short for any algorithm", Buffer.from("short").toString("base64")],
    ["DER that is not an ECDSA signature", Buffer.from([0x30, 0x06, 0x02, 0x01, 0x01, 0x04, 0x01, 0x01]).toString("base64")],
    ["empty", ""],
  ])("refuses a signature that is %s as invalid", (_, signature) => {
    const judgement = judgeSignature(stored(payloadFor(digest), signature), digest, [ecdsa.trusted]);
    expect(judgement).toEqual({ kind: "invalid", problem: "sha256:sig: the signature is not an ECDSA or Ed25519 signature" });
  });
});

describe("verificationOutcome", () => {
  const payload = payloadFor(digest);
  const good = stored(payload, ecdsa.sign(payload), "referrers");
  const byStranger = stored(payload, stranger.sign(payload));
  const wrongDigest = stored(payloadFor(otherDigest), ecdsa.sign(payloadFor(otherDigest)));
  const none = { broken: [], readProblem: undefined };

  it.each([
    ["no signature at all is missing", [], none, { kind: "missing", digest }],
    ["one that verifies wins over the others", [wrongDigest, byStranger, good], none, { kind: "verified", form: "referrers" }],
    ["a verified one wins over a failed read", [good], { broken: [], readProblem: "refused" }, { kind: "verified" }],
    ["well-formed ones no key verifies are an unknown key", [wrongDigest, byStranger], none, { kind: "unknown-key", signatures: 1 }],
    ["only broken ones are invalid", [wrongDigest], { broken: ["manifest not JSON"], readProblem: undefined }, { kind: "invalid" }],
    [
      "a failed read of no verified one is unreachable",
      [byStranger],
      { broken: [], readProblem: "refused (401)" },
      { kind: "unreachable" },
    ],
    ["a broken signature document alone is invalid", [], { broken: ["not JSON"], readProblem: undefined }, { kind: "invalid" }],
  ] as const)("%s", (_, signatures, found, expected) => {
    expect(
      verificationOutcome(digest, { ...found, signatures: [...signatures], broken: [...found.broken] }, [ecdsa.trusted]),
    ).toMatchObject(expected);
  });

  it("lists every invalid signature's problem", () => {
    const outcome = verificationOutcome(
      digest,
      { signatures: [wrongDigest], broken: ["blob sha256:x does not match"], readProblem: undefined },
      [ecdsa.trusted],
    );
    expect(outcome).toEqual({
      kind: "invalid",
      digest,
      problems: ["blob sha256:x does not match", `sha256:sig: the payload signs ${otherDigest}, not ${digest}`],
    });
  });
});

describe("readPublicKey", () => {
  it("reads the same key id whatever the PEM's line endings", () => {
    const pem = ecdsa.trusted.key.export({ format: "pem", type: "spki" }).toString();
    const rewrapped = `${pem.replace(/\n/g, "\r\n")}\n`;
    expect(readPublicKey(rewrapped).key?.id).toBe(ecdsa.trusted.id);
    expect(ecdsa.trusted.id).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it.each([
    ["text that is no PEM", "not a key", "not a PEM public key"],
    ["an RSA key", generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey, "a rsa key: only ECDSA P-256 and Ed25519"],
    ["a P-384 key", generateKeyPairSync("ec", { namedCurve: "secp384r1" }).publicKey, "a ec secp384r1 key"],
  ])("refuses %s", (_, key, problem) => {
    const pem = typeof key === "string" ? key : key.export({ format: "pem", type: "spki" }).toString();
    expect(readPublicKey(pem).problem).toContain(problem);
  });
});
