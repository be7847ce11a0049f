import { describe, expect, it } from "@jest/globals";
import { generateKeyPairSync } from "node:crypto";
import { readPublicKey, type TrustedKey } from "@captf/contract/signatures";
import {
  imageMatchesGlob,
  notAllowed,
  selectPolicies,
  verificationEvent,
  verificationOf,
  verificationRequeueMs,
  type ModulePolicy,
} from "./module-policy.js";

const digest = `sha256:${"c".repeat(64)}`;
const key = readPublicKey(
  generateKeyPairSync("ec", { namedCurve: "prime256v1" }).publicKey.export({ format: "pem", type: "spki" }).toString(),
  "release",
).key as TrustedKey;

function policy(name: string, globs: string[], namespaceSelector?: ModulePolicy["spec"]["namespaceSelector"]): ModulePolicy {
  return {
    metadata: { name },
    spec: {
      ...(namespaceSelector ? { namespaceSelector } : {}),
      images: globs.map((glob) => ({ glob })),
      authorities: [{ name: "release", key: { data: "PEM" } }],
    },
  };
}

describe("imageMatchesGlob", () => {
  it.each([
    ["registry.example.com/modules/*", "registry.example.com/modules/noop:v1", true],
    ["registry.example.com/modules/*", "registry.example.com/modules/noop@" + digest, true],
    ["registry.example.com/modules/*", "registry.example.com/modules/team/noop:v1", false],
    ["registry.example.com/modules/**", "registry.example.com/modules/team/noop:v1", true],
    ["registry.example.com/modules/noop", "registry.example.com/modules/noop:v2", true],
    ["registry.example.com/modules/noop", "registry.example.com/modules/noop2:v2", false],
    ["127.0.0.1:5000/m?dules/*", "127.0.0.1:5000/modules/noop:v1", false],
    ["registry.example.com/*/noop", "registry.example.com/modules/noop:v1", true],
  ])("%s against %s: %s", (glob, image, expected) => {
    expect(imageMatchesGlob(glob, image)).toBe(expected);
  });
});

describe("selectPolicies", () => {
  const prod = policy("prod", ["registry.example.com/modules/**"], { matchLabels: { env: "prod" } });
  const everywhere = policy("everywhere", ["registry.example.com/shared/*"]);

  it("leaves a namespace no policy governs ungoverned", () => {
    expect(selectPolicies([prod], { env: "dev" }, "anything.example/x:v1")).toEqual({ kind: "ungoverned" });
  });

  it("refuses an image the governing policies do not list, naming them", () => {
    expect(selectPolicies([prod, everywhere], { env: "prod" }, "elsewhere.example/x:v1")).toEqual({
      kind: "not-allowed",
      governing: ["everywhere", "prod"],
    });
  });

  it("requires every governing policy whose images match", () => {
    const both = policy("both", ["registry.example.com/**"]);
    const selection = selectPolicies([prod, everywhere, both], { env: "prod" }, "registry.example.com/modules/noop:v1");
    expect(selection.kind === "governed" && selection.policies.map((p) => p.metadata?.name)).toEqual(["prod", "both"]);
  });

  it("governs every namespace with a selector that does not parse: a typo never opens one", () => {
    const broken = policy("broken", ["x.example/*"], { matchExpressions: [{ key: "env", operator: "Sometimes" }] });
    expect(selectPolicies([broken], {}, "y.example/z:v1")).toMatchObject({ kind: "not-allowed" });
  });
});

describe("verificationOf", () => {
  const image = "registry.example.com/modules/noop:v1";

  it("pins a verified image to its digest and names the key", () => {
    const verification = verificationOf(image, "prod", { kind: "verified", digest, key, form: "referrers" });
    expect(verification).toMatchObject({
      kind: "verified",
      image: `registry.example.com/modules/noop@${digest}`,
      condition: { status: "True", reason: "Verified" },
    });
    expect(verification.kind === "verified" && verification.condition.message).toContain("key release of TerraformModulePolicy prod");
  });

  it.each([
    [{ kind: "missing", digest } as const, "False", "SignatureMissing", "missing"],
    [{ kind: "invalid", digest, problems: ["bad"] } as const, "False", "SignatureInvalid", "invalid"],
    [{ kind: "unknown-key", digest, signatures: 2 } as const, "False", "KeyUnknown", "unknown_key"],
    [{ kind: "unreachable", digest: undefined, problem: "refused (401)" } as const, "Unknown", "RegistryUnreachable", "unreachable"],
  ])("refuses %j as %s/%s", (outcome, status, reason, result) => {
    expect(verificationOf(image, "prod", outcome)).toMatchObject({ kind: "refused", result, condition: { status, reason } });
  });

  it("retries an unreachable registry sooner than a refusal someone must fix", () => {
    expect(verificationRequeueMs(verificationOf(image, "p", { kind: "unreachable", digest, problem: "x" }))).toBe(30_000);
    expect(verificationRequeueMs(notAllowed(image, ["p"]))).toBe(60_000);
  });
});

describe("verificationEvent", () => {
  const image = "registry.example.com/modules/noop:v1";
  const verified = verificationOf(image, "prod", { kind: "verified", digest, key, form: "tag" });
  const missing = verificationOf(image, "prod", { kind: "missing", digest });

  it("records a first verification and a newly verified digest (a re-pushed tag), not the same digest again", () => {
    expect(verificationEvent(verified, undefined)?.reason).toBe("ImageVerified");
    const other = { reason: "Verified", message: `x is sha256:${"d".repeat(64)}` };
    expect(verificationEvent(verified, other)?.reason).toBe("ImageVerified");
    expect(verificationEvent(verified, { reason: "Verified", message: `x is ${digest}` })).toBeUndefined();
  });

  it("records a refusal once per reason", () => {
    expect(verificationEvent(missing, { reason: "Verified" })).toMatchObject({ reason: "ImageVerificationFailed" });
    expect(verificationEvent(missing, { reason: "SignatureMissing" })).toBeUndefined();
  });
});
