import { describe, expect, it } from "@jest/globals";
import type { V1Secret } from "@kubernetes/client-node";
import { conditionReasons } from "@captf/contract/api";
import type { Condition } from "../api/kubernetes-types.js";
import type { TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { decideIdentityStatus, mirroredNamespaces, type SourceSecretReading } from "./identity-status.js";

const now = Date.parse("2026-03-01T12:00:00Z");
const earlier = "2026-02-01T00:00:00Z";

function identity(options: { requiredKeys?: string[]; conditions?: Condition[]; namespaces?: string[] } = {}): TerraformClusterIdentity {
  return {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
    kind: "TerraformClusterIdentity",
    metadata: { name: "aws", generation: 4 },
    spec: {
      secretRef: { name: "aws-creds", namespace: "captf-system" },
      ...(options.requiredKeys ? { requiredKeys: options.requiredKeys } : {}),
    },
    ...(options.conditions || options.namespaces
      ? {
          status: {
            ...(options.conditions ? { conditions: options.conditions } : {}),
            ...(options.namespaces ? { namespaces: options.namespaces } : {}),
          },
        }
      : {}),
  } as TerraformClusterIdentity;
}

const ref = (kind = "TerraformMachine", apiVersion = "infrastructure.cluster.x-k8s.io/v1alpha1") => ({
  apiVersion,
  kind,
  name: "x",
  uid: "u",
});

function mirror(
  namespace: string,
  overrides: { identity?: string; labels?: Record<string, string>; hash?: boolean; refs?: ReturnType<typeof ref>[] } = {},
): V1Secret {
  return {
    metadata: {
      name: "captf-creds-aws",
      namespace,
      labels: overrides.labels ?? { "captf.io/mirrored": "true", "captf.io/managed": "true" },
      annotations: {
        "captf.io/identity": overrides.identity ?? "aws",
        ...(overrides.hash === false ? {} : { "captf.io/source-hash": "abc" }),
      },
      ownerReferences: overrides.refs ?? [ref()],
    },
  };
}

const found: SourceSecretReading = { found: true, keys: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] };

describe("decideIdentityStatus", () => {
  it.each<[string, TerraformClusterIdentity, SourceSecretReading, Pick<Condition, "status" | "reason" | "message">, number]>([
    [
      "the Secret exists",
      identity(),
      found,
      { status: "True", reason: "SecretFound", message: "Secret captf-system/aws-creds exists" },
      300_000,
    ],
    [
      "it holds every required key",
      identity({ requiredKeys: ["AWS_ACCESS_KEY_ID"] }),
      found,
      { status: "True", reason: "SecretFound", message: "Secret captf-system/aws-creds exists and holds every required key" },
      300_000,
    ],
    [
      "the Secret is missing",
      identity(),
      { found: false },
      { status: "False", reason: "SecretNotFound", message: "Secret captf-system/aws-creds does not exist" },
      30_000,
    ],
    [
      "required keys are missing (named, never valued)",
      identity({ requiredKeys: ["AWS_ACCESS_KEY_ID", "AWS_REGION", "AWS_SESSION_TOKEN"] }),
      found,
      {
        status: "False",
        reason: "CredentialsIncomplete",
        message: "Secret captf-system/aws-creds lacks required keys: AWS_REGION, AWS_SESSION_TOKEN",
      },
      30_000,
    ],
    [
      "the Secret cannot be read",
      identity(),
      { failed: "HTTP 403: forbidden" },
      { status: "Unknown", reason: "ReadyUnknown", message: "reading Secret captf-system/aws-creds failed: HTTP 403: forbidden" },
      30_000,
    ],
  ])("%s", (_title, object, source, ready, requeue) => {
    const decision = decideIdentityStatus({ identity: object, source, mirrors: [], now });
    expect(decision.status.conditions).toEqual([
      { type: "Ready", observedGeneration: 4, lastTransitionTime: "2026-03-01T12:00:00Z", ...ready },
    ]);
    expect(decision.requeueAfterMillis).toBe(requeue);
    expect(decision.changed).toBe(true);
    expect(conditionReasons.Ready[ready.status as "True" | "False" | "Unknown"]).toContain(ready.reason);
  });

  it("keeps lastTransitionTime while the status stays, and reports no change when nothing changed", () => {
    const stored: Condition = {
      type: "Ready",
      status: "True",
      observedGeneration: 4,
      lastTransitionTime: earlier,
      reason: "SecretFound",
      message: "Secret captf-system/aws-creds exists",
    };
    // the API server returns keys in its own order
    const reordered = Object.fromEntries(Object.entries(stored).sort(([a], [b]) => a.localeCompare(b))) as Condition;
    const decision = decideIdentityStatus({
      identity: identity({ conditions: [reordered], namespaces: ["team-a"] }),
      source: found,
      mirrors: [mirror("team-a")],
      now,
    });
    expect(decision.status.conditions[0]?.lastTransitionTime).toBe(earlier);
    expect(decision.changed).toBe(false);
    expect(decision.event).toBeUndefined();
  });

  it("moves lastTransitionTime when the status changes, and keeps other conditions", () => {
    const other: Condition = { type: "Custom", status: "True", lastTransitionTime: earlier, reason: "X", message: "" } as Condition;
    const stored: Condition = { type: "Ready", status: "True", lastTransitionTime: earlier, reason: "SecretFound", message: "" };
    const decision = decideIdentityStatus({
      identity: identity({ conditions: [other, stored] }),
      source: { found: false },
      mirrors: [],
      now,
    });
    expect(decision.status.conditions).toEqual([
      other,
      expect.objectContaining({ type: "Ready", status: "False", lastTransitionTime: "2026-03-01T12:00:00Z" }),
    ]);
  });

  it.each<[string, Condition | undefined, SourceSecretReading, string | undefined]>([
    ["a first reading that is good emits nothing", undefined, found, undefined],
    ["a first reading that is bad emits IdentitySecretNotFound", undefined, { found: false }, "IdentitySecretNotFound"],
    [
      "found again after missing",
      { type: "Ready", status: "False", lastTransitionTime: earlier, reason: "SecretNotFound", message: "" },
      found,
      "IdentitySecretFound",
    ],
    [
      "lost after found",
      { type: "Ready", status: "True", lastTransitionTime: earlier, reason: "SecretFound", message: "" },
      { found: false },
      "IdentitySecretNotFound",
    ],
    [
      "still missing emits nothing",
      { type: "Ready", status: "False", lastTransitionTime: earlier, reason: "SecretNotFound", message: "" },
      { found: false },
      undefined,
    ],
    [
      "unreadable emits nothing",
      { type: "Ready", status: "True", lastTransitionTime: earlier, reason: "SecretFound", message: "" },
      { failed: "HTTP 500" },
      undefined,
    ],
  ])("%s", (_title, previous, source, reason) => {
    const decision = decideIdentityStatus({ identity: identity(previous ? { conditions: [previous] } : {}), source, mirrors: [], now });
    expect(decision.event?.reason).toBe(reason);
  });

  it("emits IdentitySecretNotFound, a Warning naming the missing keys, when keys go missing", () => {
    const previous: Condition = { type: "Ready", status: "False", lastTransitionTime: earlier, reason: "SecretNotFound", message: "" };
    const decision = decideIdentityStatus({
      identity: identity({ requiredKeys: ["AWS_REGION"], conditions: [previous] }),
      source: found,
      mirrors: [],
      now,
    });
    expect(decision.event).toEqual({
      reason: "IdentitySecretNotFound",
      type: "Warning",
      note: "Secret captf-system/aws-creds lacks required keys: AWS_REGION",
    });
  });
});

describe("mirroredNamespaces", () => {
  it("lists, sorted and once each, the namespaces with a proper mirror of the identity that an object uses", () => {
    const mirrors = [
      mirror("team-b"),
      mirror("team-a", { refs: [ref("TerraformCluster"), ref("TerraformMachinePool")] }),
      mirror("team-a"),
      mirror("other-identity", { identity: "gcp" }),
      mirror("unlabelled", { labels: { "captf.io/mirrored": "true" } }),
      mirror("no-hash", { hash: false }),
      mirror("unused", { refs: [] }),
      mirror("foreign-owner", { refs: [ref("Deployment", "apps/v1")] }),
    ];
    expect(mirroredNamespaces("aws", mirrors)).toEqual(["team-a", "team-b"]);
  });

  it("goes into status.namespaces", () => {
    const decision = decideIdentityStatus({
      identity: identity({ namespaces: ["gone"] }),
      source: found,
      mirrors: [mirror("team-b"), mirror("team-a")],
      now,
    });
    expect(decision.status.namespaces).toEqual(["team-a", "team-b"]);
    expect(decision.changed).toBe(true);
  });
});
