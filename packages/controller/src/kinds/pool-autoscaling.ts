import { annotations, replicasManagedByValue } from "@captf/contract/api";
import type { ConditionValue } from "../conditions/conditions.js";
import { autoscalingFromAnnotations, type NamespacedMeta } from "./render-inputs.js";

/**
 * Autoscaled machine pools: while the MachinePool carries valid autoscaler bounds, the module
 * owns the replica count and captf writes what it observes back to `MachinePool.spec.replicas`,
 * claiming the pool with `cluster.x-k8s.io/replicas-managed-by: captf`. Pure: the adapter writes.
 */

export interface MachinePoolReplicas {
  metadata: NamespacedMeta;
  spec?: { replicas?: number };
}

export interface ReplicasWriteBack {
  condition: ConditionValue;
  /** Set the replicas-managed-by annotation to captf (true) or remove captf's (false). */
  claim?: boolean;
  /** Write this count to MachinePool.spec.replicas. */
  replicas?: number;
  /** Another manager owns the replicas: warn once. */
  foreignManager?: string;
}

/** Cluster API's reading of `replicas-managed-by`: any value but "false" says a manager owns the replica count. Pure. */
export function replicasManagedByTruthy(value: string | undefined): value is string {
  return value !== undefined && value !== "false";
}

export function decideReplicasWriteBack(machinePool: MachinePoolReplicas, observedReplicas: number | undefined): ReplicasWriteBack {
  const { autoscaling, reason } = autoscalingFromAnnotations(machinePool);
  const manager = machinePool.metadata.annotations?.[annotations.replicasManagedBy];
  if (!autoscaling.enabled) {
    const condition: ConditionValue =
      reason === "AutoscalingAnnotationsInvalid"
        ? {
            status: "False",
            reason,
            message:
              "the autoscaler min/max annotations must both be non-negative integers with min <= max; the pool applies without autoscaling",
          }
        : { status: "False", reason };
    return { condition, ...(manager === replicasManagedByValue ? { claim: false } : {}) };
  }
  if (replicasManagedByTruthy(manager) && manager !== replicasManagedByValue) {
    return {
      condition: {
        status: "False",
        reason: "ReplicasManagedExternally",
        message: `${annotations.replicasManagedBy} is ${JSON.stringify(manager)}: captf does not write the replica count back`,
      },
      foreignManager: manager,
    };
  }
  const writeBack: ReplicasWriteBack = { condition: { status: "True", reason: "ReplicasManagedByModule" } };
  // Absent or "false" claims no owner: captf claims it (seed 003: never a foreign truthy value).
  if (manager !== replicasManagedByValue) writeBack.claim = true;
  if (observedReplicas !== undefined && observedReplicas !== machinePool.spec?.replicas) writeBack.replicas = observedReplicas;
  return writeBack;
}
