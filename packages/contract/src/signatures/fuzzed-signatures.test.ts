// Malformed signatures (issue 31's fuzz drill): payloads and signature documents mutated at random, served by an in-memory
// store as a registry would. Whatever they hold, the verifier answers with an outcome (never throws), and nothing but the
// untouched payload with its own signature verifies.
import { describe, expect, it } from "@jest/globals";
import { createHash, generateKeyPairSync, sign } from "node:crypto";
import fc from "fast-check";
import { ImageReadError, type Descriptor, type Fetched } from "../oci/source.js";
import { readPublicKey, type TrustedKey } from "./public-keys.js";
import { signatureAnnotation, signatureTag, simpleSigningMediaType } from "./simple-signing.js";
import { judgeSignature, verifyImageSignature, type SignatureStore } from "./verify-image.js";

const seed = 1717;
const digest = `sha256:${"a".repeat(64)}`;
const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const key = readPublicKey(publicKey.export({ format: "pem", type: "spki" }).toString(), "release").key as TrustedKey;
const payload = Buffer.from(
  JSON.stringify({
    critical: {
      identity: { "docker-reference": "registry.example.com/modules/noop" },
      image: { "docker-manifest-digest": digest },
      type: "cosign container image signature",
    },
    optional: null,
  }),
);
const signature = sign("sha256", payload, privateKey).toString("base64");

const sha = (bytes: Buffer) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

/** A store holding one signature manifest at the digest's signature tag: the given manifest bytes and blobs. */
function store(manifest: Buffer, blobs: ReadonlyMap<string, Buffer>): SignatureStore {
  return {
    tagged: async (tag) =>
      tag === signatureTag(digest)
        ? { mediaType: "application/vnd.oci.image.manifest.v1+json", digest: sha(manifest), bytes: manifest }
        : undefined,
    referrers: async () => undefined,
    manifest: async (descriptor: Descriptor): Promise<Fetched> => ({
      mediaType: descriptor.mediaType,
      digest: descriptor.digest,
      bytes: manifest,
    }),
    blob: async (descriptor) => {
      const bytes = blobs.get(descriptor.digest) ?? Buffer.alloc(0);
      // As the registry client does: the bytes are checked against the digest they were asked by.
      if (sha(bytes) !== descriptor.digest) throw new ImageReadError(`blob ${descriptor.digest} does not match`);
      return (async function* () {
        yield bytes;
      })();
    },
  };
}

function mutate(bytes: Buffer, edits: readonly { at: number; value: number }[]): Buffer {
  const copy = Buffer.from(bytes);
  for (const { at, value } of edits) if (copy.length > 0) copy[at % copy.length] = value;
  return copy;
}

const edits = fc.array(fc.record({ at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 8 });

describe("malformed signatures", () => {
  it("never verifies a payload changed after signing, and never throws", () => {
    fc.assert(
      fc.property(edits, (changes) => {
        const changed = mutate(payload, changes);
        const judgement = judgeSignature({ form: "tag", manifest: "sha256:sig", payload: changed, signature }, digest, [key]);
        expect(judgement.kind === "verified").toBe(changed.equals(payload));
      }),
      { seed, numRuns: 300 },
    );
  });

  it("never verifies a signature changed or made of other bytes, and never throws", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          edits.map((changes) => mutate(Buffer.from(signature, "base64"), changes).toString("base64")),
          fc.string(),
        ),
        (text) => {
          const judgement = judgeSignature({ form: "tag", manifest: "sha256:sig", payload, signature: text }, digest, [key]);
          if (text !== signature) expect(judgement.kind).not.toBe("verified");
        },
      ),
      { seed, numRuns: 300 },
    );
  });

  it("answers an outcome for any signature manifest a registry serves", async () => {
    const layer = {
      mediaType: simpleSigningMediaType,
      digest: sha(payload),
      size: payload.length,
      annotations: { [signatureAnnotation]: signature },
    };
    const good = Buffer.from(JSON.stringify({ schemaVersion: 2, layers: [layer] }));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          edits.map((changes) => mutate(good, changes)),
          fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
        ),
        async (manifest) => {
          const outcome = await verifyImageSignature(
            store(manifest, new Map([[layer.digest, payload]])),
            async () => ({ mediaType: "", digest, bytes: Buffer.alloc(0) }),
            [key],
          );
          expect(["verified", "missing", "invalid", "unknown-key", "unreachable"]).toContain(outcome.kind);
          if (outcome.kind === "verified") expect(manifest.toString()).toContain(signature.slice(0, 16));
        },
      ),
      { seed, numRuns: 300 },
    );
  });

  it.each([
    ["null"],
    ["[]"],
    ['{"layers":"x"}'],
    ['{"layers":[null,1,"x",{"mediaType":7}]}'],
    ['{"layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":"sha256:x","size":1}]}'],
    [
      '{"layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":"sha256:' +
        "b".repeat(64) +
        '","size":1,"annotations":{"dev.cosignproject.cosign/signature":5}}]}',
    ],
  ])("finds no signature in the signature manifest %s", async (text) => {
    const outcome = await verifyImageSignature(
      store(Buffer.from(text), new Map()),
      async () => ({ mediaType: "", digest, bytes: Buffer.alloc(0) }),
      [key],
    );
    expect(outcome).toEqual({ kind: "missing", digest });
  });
});
