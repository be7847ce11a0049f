import { describe, expect, it } from "@jest/globals";
import { decideReplicasWriteBack } from "./pool-autoscaling.js";

const min = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const max = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
const managedBy = "cluster.x-k8s.io/replicas-managed-by";
const pool = (annotations: Record<string, string>, replicas?: number) => ({
  metadata: { name: "p", namespace: "ns", annotations },
  spec: replicas === undefined ? {} : { replicas },
});

describe("decideReplicasWriteBack", () => {
  it.each([
    ["no autoscaler annotations", pool({}, 2), 3, { condition: { status: "False", reason: "AutoscalingDisabled" } }],
    [
      "no annotations, captf's claim left over: released",
      pool({ [managedBy]: "captf" }, 2),
      3,
      { condition: { status: "False", reason: "AutoscalingDisabled" }, claim: false },
    ],
    [
      "no annotations, another manager's claim: kept",
      pool({ [managedBy]: "karpenter" }, 2),
      3,
      { condition: { status: "False", reason: "AutoscalingDisabled" } },
    ],
    [
      "bounds, unclaimed: claim and write the observed count",
      pool({ [min]: "1", [max]: "5" }, 2),
      3,
      { condition: { status: "True", reason: "ReplicasManagedByModule" }, claim: true, replicas: 3 },
    ],
    [
      "bounds, claimed, same count: nothing to write",
      pool({ [min]: "1", [max]: "5", [managedBy]: "captf" }, 3),
      3,
      { condition: { status: "True", reason: "ReplicasManagedByModule" } },
    ],
    [
      "bounds, count not observed yet: claim only",
      pool({ [min]: "1", [max]: "5" }, 2),
      undefined,
      { condition: { status: "True", reason: "ReplicasManagedByModule" }, claim: true },
    ],
    [
      'bounds, "false" (no owner, as Cluster API reads it): claimed and the count written',
      pool({ [min]: "1", [max]: "5", [managedBy]: "false" }, 2),
      3,
      { condition: { status: "True", reason: "ReplicasManagedByModule" }, claim: true, replicas: 3 },
    ],
    [
      'bounds, "true" (another manager, truthy): hands off',
      pool({ [min]: "1", [max]: "5", [managedBy]: "true" }, 2),
      3,
      { condition: { status: "False", reason: "ReplicasManagedExternally" }, foreignManager: "true" },
    ],
    [
      "bounds, empty (truthy to Cluster API): hands off",
      pool({ [min]: "1", [max]: "5", [managedBy]: "" }, 2),
      3,
      { condition: { status: "False", reason: "ReplicasManagedExternally" }, foreignManager: "" },
    ],
    [
      'no annotations, "false" left by another manager: not captf\'s to release',
      pool({ [managedBy]: "false" }, 2),
      3,
      { condition: { status: "False", reason: "AutoscalingDisabled" } },
    ],
    [
      "bounds, another manager: hands off",
      pool({ [min]: "1", [max]: "5", [managedBy]: "karpenter" }, 2),
      3,
      { condition: { status: "False", reason: "ReplicasManagedExternally" }, foreignManager: "karpenter" },
    ],
  ])("%s", (_what, machinePool, observed, expected) => {
    expect(decideReplicasWriteBack(machinePool, observed)).toMatchObject(expected);
    const plan = decideReplicasWriteBack(machinePool, observed);
    expect(plan.replicas).toBe((expected as { replicas?: number }).replicas);
    expect(plan.claim).toBe((expected as { claim?: boolean }).claim);
  });

  it("explains invalid bounds and applies without autoscaling", () => {
    const plan = decideReplicasWriteBack(pool({ [min]: "5", [max]: "1" }, 2), 3);
    expect(plan.condition).toMatchObject({ status: "False", reason: "AutoscalingAnnotationsInvalid" });
    expect(plan.condition.message).toContain("min <= max");
    expect(plan.replicas).toBeUndefined();
  });
});
