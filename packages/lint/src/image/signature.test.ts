import { describe, expect, it } from "@jest/globals";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readPublicKey, type TrustedKey } from "@captf/contract/signatures";
import { readKeyFiles } from "../commands/image.js";
import { UsageError } from "../commands/io.js";
import { checkSignature, signatureFinding } from "./signature.js";

const digest = `sha256:${"f".repeat(64)}`;
const pem = generateKeyPairSync("ed25519").publicKey.export({ format: "pem", type: "spki" }).toString();
const key = readPublicKey(pem, "cosign.pub").key as TrustedKey;

describe("signatureFinding", () => {
  it("has nothing to say of a verified image", () => {
    expect(signatureFinding({ kind: "verified", digest, key, form: "tag" })).toBeUndefined();
  });

  it.each([
    [{ kind: "missing", digest } as const, "SignatureMissing: "],
    [{ kind: "invalid", digest, problems: ["the payload signs another digest"] } as const, "SignatureInvalid: "],
    [{ kind: "unknown-key", digest, signatures: 2 } as const, "KeyUnknown: "],
    [{ kind: "unreachable", digest: undefined, problem: "refused (401)" } as const, "RegistryUnreachable: "],
  ])("reports %j as an image/signature error named like the manager's reason", (outcome, prefix) => {
    expect(signatureFinding(outcome)).toMatchObject({
      id: "image/signature",
      severity: "error",
      message: expect.stringMatching(`^${prefix}`),
    });
  });

  it("refuses to check an OCI layout, which holds no signatures", async () => {
    const layout = {
      root: async () => ({ mediaType: "", digest, bytes: Buffer.alloc(0) }),
      manifest: async () => ({ mediaType: "", digest, bytes: Buffer.alloc(0) }),
      blob: async () => (async function* () {})(),
    };
    const finding = await checkSignature(layout, await layout.root(), [key]);
    expect(finding?.message).toBe("signatures are read from a registry: an OCI layout or archive carries none");
  });
});

describe("readKeyFiles", () => {
  const dir = mkdtempSync(join(tmpdir(), "tfcapi-lint-keys-"));

  it("reads PEM public keys", () => {
    writeFileSync(join(dir, "cosign.pub"), pem);
    expect(readKeyFiles([join(dir, "cosign.pub")]).map((read) => read.id)).toEqual([key.id]);
  });

  it.each([
    ["a missing file", "absent.pub", undefined, "ENOENT"],
    [
      "an RSA key",
      "rsa.pub",
      generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ format: "pem", type: "spki" }).toString(),
      "only ECDSA P-256 and Ed25519",
    ],
  ])("refuses %s as a usage error", (_, file, content, problem) => {
    if (content) writeFileSync(join(dir, file), content);
    expect(() => readKeyFiles([join(dir, file)])).toThrow(UsageError);
    expect(() => readKeyFiles([join(dir, file)])).toThrow(problem);
  });
});
