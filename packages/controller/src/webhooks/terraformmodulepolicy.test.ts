import { describe, expect, it } from "@jest/globals";
import { generateKeyPairSync } from "node:crypto";
import type { TerraformModulePolicy } from "../api/terraformmodulepolicy.js";
import { validateTerraformModulePolicy } from "./terraformmodulepolicy.js";

const pem = (key: ReturnType<typeof generateKeyPairSync>["publicKey"]) => key.export({ format: "pem", type: "spki" }).toString();

function policy(authorities: TerraformModulePolicy["spec"]["authorities"], selector?: object): TerraformModulePolicy {
  return { spec: { images: [{ glob: "registry.example.com/**" }], authorities, ...(selector ? { namespaceSelector: selector } : {}) } };
}

describe("validateTerraformModulePolicy", () => {
  it("admits ECDSA P-256 and Ed25519 keys inline", () => {
    const verdict = validateTerraformModulePolicy(
      undefined,
      policy([
        { name: "release", key: { data: pem(generateKeyPairSync("ec", { namedCurve: "prime256v1" }).publicKey) } },
        { name: "ci", key: { data: pem(generateKeyPairSync("ed25519").publicKey) } },
      ]),
    );
    expect(verdict).toEqual({ allowed: true });
  });

  it("refuses an inline key that is no PEM or of another algorithm, naming the authority", () => {
    const verdict = validateTerraformModulePolicy(
      undefined,
      policy([
        { name: "typo", key: { data: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n" } },
        { name: "rsa", key: { data: pem(generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey) } },
      ]),
    );
    expect(verdict.allowed).toBe(false);
    expect(!verdict.allowed && verdict.reasons).toEqual([
      expect.stringMatching(/^spec\.authorities\[0\]\.key\.data \(typo\): it is not a PEM public key/),
      "spec.authorities[1].key.data (rsa): a rsa key: only ECDSA P-256 and Ed25519 keys are supported",
    ]);
  });

  it("refuses a namespaceSelector that does not parse, and warns that a Secret key is read later", () => {
    const verdict = validateTerraformModulePolicy(
      undefined,
      policy([{ name: "vault", key: { secretRef: { name: "keys", namespace: "captf-system" } } }], {
        matchLabels: { "bad key!": "x" },
      }),
    );
    expect(verdict.allowed).toBe(false);
    expect(verdict.warnings).toEqual([expect.stringContaining("PolicyKeyInvalid")]);
  });
});
