import { describe, expect, it } from "@jest/globals";
import { Registry } from "prom-client";
import { recordingEvents } from "../events/recording-events.test-support.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import type { ImageVerifier } from "./image-verifier.js";
import { keysUnusable, notAllowed, verificationOf, type ImageVerification } from "./module-policy.js";
import { checkRunImage } from "./run-image-check.js";

const image = "registry.example.com/modules/noop:v1";
const digest = `sha256:${"e".repeat(64)}`;

function check(verification: ImageVerification, previous?: { reason: string; message?: string }) {
  const registry = new Registry();
  const metrics = new CaptfMetrics(registry);
  const { events, recorded } = recordingEvents();
  const verifier: ImageVerifier = { verify: async () => verification };
  const subject = {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
    kind: "TerraformMachine",
    name: "m",
    namespace: "ns",
    uid: "u",
  };
  const run = checkRunImage({
    verifier,
    kind: "TerraformMachine",
    namespace: "ns",
    image,
    pullSecrets: [],
    previous,
    events,
    subject,
    metrics,
  });
  return { run, registry, recorded };
}

describe("checkRunImage", () => {
  it("runs an ungoverned image as it is, with no condition until a policy governed it before (NoPolicy)", async () => {
    expect(await check({ kind: "ungoverned" }).run).toEqual({ image, condition: undefined });
    expect(await check({ kind: "ungoverned" }, { reason: "Verified" }).run).toMatchObject({
      image,
      condition: { status: "True", reason: "NoPolicy" },
    });
  });

  it("runs the verified digest, counts it and records ImageVerified", async () => {
    const condition = { status: "True", reason: "Verified", message: `${image} is ${digest}` } as const;
    const { run, registry, recorded } = check({
      kind: "verified",
      image: `registry.example.com/modules/noop@${digest}`,
      digest,
      condition,
    });
    expect(await run).toEqual({ image: `registry.example.com/modules/noop@${digest}`, condition });
    expect(await seriesValue(registry, "captf_image_verifications_total", { kind: "TerraformMachine", result: "verified" })).toBe(1);
    expect(recorded.map((event) => event.reason)).toEqual(["ImageVerified"]);
  });

  it.each([
    [notAllowed(image, ["prod"]), "False", "ImageNotAllowed", { result: "not_allowed" }, 60_000],
    [
      keysUnusable("prod", ["release: Secret captf-system/keys is not found"]),
      "False",
      "PolicyKeyInvalid",
      { result: "key_invalid" },
      60_000,
    ],
    [verificationOf(image, "prod", { kind: "missing", digest }), "False", "SignatureMissing", { result: "missing" }, 60_000],
    [
      verificationOf(image, "prod", { kind: "invalid", digest, problems: ["x"] }),
      "False",
      "SignatureInvalid",
      { result: "invalid" },
      60_000,
    ],
    [
      verificationOf(image, "prod", { kind: "unknown-key", digest, signatures: 1 }),
      "False",
      "KeyUnknown",
      { result: "unknown_key" },
      60_000,
    ],
    [
      verificationOf(image, "prod", { kind: "unreachable", digest, problem: "x" }),
      "Unknown",
      "RegistryUnreachable",
      { result: "unreachable" },
      30_000,
    ],
  ])("holds the Job on a refusal, counted by result: %#", async (verification, status, reason, labels, requeueAfterMs) => {
    const { run, registry, recorded } = check(verification);
    expect(await run).toEqual({ refused: { condition: expect.objectContaining({ status, reason }), requeueAfterMs } });
    expect(await seriesValue(registry, "captf_image_verifications_total", labels)).toBe(1);
    expect(recorded).toEqual([expect.objectContaining({ reason: "ImageVerificationFailed" })]);
  });
});
