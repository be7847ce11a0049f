/**
 * Which TerraformModulePolicies govern an object's image, and what a verification's outcome makes of its ImageVerified
 * condition, its events and its metric: pure functions of what the verifier read.
 */
import type { DeclaredCondition } from "@captf/contract/api";
import { imageReferenceName } from "@captf/contract/oci";
import type { VerificationOutcome } from "@captf/contract/signatures";
import type { TerraformModulePolicy } from "../api/terraformmodulepolicy.js";
import type { ImageVerificationResult } from "../metrics/captf-metrics.js";
import { matchesLabels, structuredSelectorRequirements } from "../runtime/label-selector.js";

export type ModulePolicy = Pick<TerraformModulePolicy, "spec"> & { metadata?: { name?: string } };

/** Whether `image` (a reference; its tag and digest are ignored) matches `glob`: `*` within a path segment, `**` across. Pure. */
export function imageMatchesGlob(glob: string, image: string): boolean {
  const name = imageReferenceName(image);
  const pattern = glob
    .split("**")
    .map((part) => part.split("*").map(escapeRegExp).join("[^/]*"))
    .join(".*");
  return new RegExp(`^${pattern}$`).test(name);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Whether the policy governs a namespace with these labels (an unset or empty selector governs every one). Pure. */
export function governsNamespace(policy: ModulePolicy, namespaceLabels: Readonly<Record<string, string>> | undefined): boolean {
  const selector = policy.spec.namespaceSelector;
  if (!selector) return true;
  try {
    return matchesLabels(structuredSelectorRequirements(selector), namespaceLabels);
  } catch {
    // A selector the webhook would refuse governs everything: a typo never opens a namespace.
    return true;
  }
}

/**
 * The policies an image in a namespace must satisfy: none governs it (ungoverned), or some govern the namespace and those
 * whose images match must each be satisfied; a governed image no policy matches is not allowed. Pure.
 */
export type PolicySelection =
  | { kind: "ungoverned" }
  | { kind: "not-allowed"; governing: string[] }
  | { kind: "governed"; policies: ModulePolicy[] };

export function selectPolicies(
  policies: readonly ModulePolicy[],
  namespaceLabels: Readonly<Record<string, string>> | undefined,
  image: string,
): PolicySelection {
  const governing = policies.filter((policy) => governsNamespace(policy, namespaceLabels));
  if (governing.length === 0) return { kind: "ungoverned" };
  const matching = governing.filter((policy) => policy.spec.images.some(({ glob }) => imageMatchesGlob(glob, image)));
  if (matching.length === 0) return { kind: "not-allowed", governing: governing.map(policyName).sort() };
  return { kind: "governed", policies: matching };
}

export function policyName(policy: ModulePolicy): string {
  return policy.metadata?.name ?? "(unnamed)";
}

type VerificationResult = ImageVerificationResult;

/** What a governed image's check came to: verified (the digest the Job runs), or refused with the condition that says why. */
export type ImageVerification =
  | { kind: "ungoverned" }
  | { kind: "verified"; image: string; digest: string; condition: DeclaredCondition<"ImageVerified"> }
  | { kind: "refused"; result: VerificationResult; condition: DeclaredCondition<"ImageVerified"> };

/** The image pinned to `digest`: `<name>@<digest>`. Pure. */
export function pinnedReference(image: string, digest: string): string {
  return `${imageReferenceName(image)}@${digest}`;
}

/** A verification outcome of one policy as the object's ImageVerified condition and metric result. Pure. */
export function verificationOf(image: string, policy: string, outcome: VerificationOutcome): ImageVerification {
  const of = `${image}${outcome.digest ? ` (${outcome.digest})` : ""}`;
  switch (outcome.kind) {
    case "verified":
      return {
        kind: "verified",
        image: pinnedReference(image, outcome.digest),
        digest: outcome.digest,
        condition: {
          status: "True",
          reason: "Verified",
          message:
            `${image} is ${outcome.digest}, signed by key ${outcome.key.name ?? outcome.key.id} of TerraformModulePolicy ${policy} ` +
            `(${outcome.form === "tag" ? "signature tag" : "OCI referrer"}); the Job runs that digest`,
        },
      };
    case "missing":
      return refused(
        "missing",
        "SignatureMissing",
        `${of} has no cosign signature (TerraformModulePolicy ${policy}): sign it and push the signature`,
      );
    case "invalid":
      return refused(
        "invalid",
        "SignatureInvalid",
        `${of}: its signatures are invalid (TerraformModulePolicy ${policy}): ${outcome.problems.slice(0, 3).join("; ")}`,
      );
    case "unknown-key":
      return refused(
        "unknown_key",
        "KeyUnknown",
        `${of} has ${outcome.signatures} signature(s), none by a key of TerraformModulePolicy ${policy} (signed by another ` +
          `key, or altered): sign it with a key of the policy, or add the signer's public key to it`,
      );
    case "unreachable":
      return {
        kind: "refused",
        result: "unreachable",
        condition: {
          status: "Unknown",
          reason: "RegistryUnreachable",
          message: `the signatures of ${of} could not be read: ${outcome.problem}; retried`,
        },
      };
  }
}

function refused(
  result: VerificationResult,
  reason: "SignatureMissing" | "SignatureInvalid" | "KeyUnknown" | "ImageNotAllowed" | "PolicyKeyInvalid",
  message: string,
): ImageVerification {
  return { kind: "refused", result, condition: { status: "False", reason, message } };
}

/** A governed image that no governing policy's images match. Pure. */
export function notAllowed(image: string, governing: readonly string[]): ImageVerification {
  return refused(
    "not_allowed",
    "ImageNotAllowed",
    `${imageReferenceName(image)} matches the images of none of the TerraformModulePolicies governing this namespace ` +
      `(${governing.join(", ")}): use an image they allow, or add it to one`,
  );
}

/** A policy none of whose keys could be read. Pure. */
export function keysUnusable(policy: string, problems: readonly string[]): ImageVerification {
  return refused("key_invalid", "PolicyKeyInvalid", `TerraformModulePolicy ${policy} has no usable key: ${problems.join("; ")}`);
}

/** Requeue after a refusal: a registry that did not answer soon, a refusal someone must fix later (a push or a policy change). */
export function verificationRequeueMs(verification: ImageVerification): number {
  return verification.kind === "refused" && verification.result === "unreachable" ? 30_000 : 60_000;
}

/**
 * The event of this pass's verification: verified a digest the previous condition did not name (a first verification or a
 * re-pushed tag), or a refusal of a reason the condition did not have. Pure.
 */
export function verificationEvent(
  verification: ImageVerification,
  previous: { reason?: string; message?: string } | undefined,
): { reason: "ImageVerified" | "ImageVerificationFailed"; note: string } | undefined {
  if (verification.kind === "ungoverned") return undefined;
  const { condition } = verification;
  if (verification.kind === "verified") {
    if (previous?.reason === "Verified" && previous.message?.includes(verification.digest)) return undefined;
    return { reason: "ImageVerified", note: condition.message! };
  }
  if (previous?.reason === condition.reason) return undefined;
  return { reason: "ImageVerificationFailed", note: condition.message! };
}
