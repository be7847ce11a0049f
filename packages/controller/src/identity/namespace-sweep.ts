/**
 * The namespace sweep (reference: after a finalizer is removed, and on the leader at start and every
 * `--sync-period` with 10% jitter, for what a crash between the two left behind): once a namespace holds no
 * TerraformCluster, TerraformMachine or TerraformMachinePool any more, the ServiceAccounts,
 * RoleBindings and Leases captf made there (labelled `captf.io/managed=true`) are deleted, so a
 * namespace that no longer uses captf keeps nothing of it. Reads are live: a cache could still
 * show the object whose finalizer was just removed, or miss one created a moment ago.
 */
import { labels } from "@captf/contract/api";
import type { Logger } from "pino";
import { apiErrorMessage, ignoreNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { Controller } from "../runtime/controller.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { terraformClusterType, terraformMachinePoolType, terraformMachineType } from "../api/resource-types.js";

const workspaceTypes = [terraformClusterType, terraformMachineType, terraformMachinePoolType];

/** What captf makes in a namespace, removed by the sweep in this order. */
const sweptTypes = [builtinTypes.serviceAccount, builtinTypes.roleBinding, builtinTypes.lease];

/** What the sweep removed, by kind and name ("nothing" when objects remain). */
export type NamespaceSweepResult = { swept: false } | { swept: true; removed: string[] };

export async function sweepNamespace(client: KubeApi, namespace: string): Promise<NamespaceSweepResult> {
  for (const type of workspaceTypes) {
    const remaining = await client.list(type, namespace, { limit: 1 });
    if (remaining.items.length > 0) return { swept: false };
  }
  const labelSelector = `${labels.managed}=true`;
  const removed: string[] = [];
  for (const type of sweptTypes) {
    for (const object of (await client.list(type, namespace, { labelSelector })).items) {
      await client.delete(type, namespace, object.metadata!.name!).catch(ignoreNotFound);
      removed.push(`${type.kind}/${object.metadata!.name}`);
    }
  }
  return { swept: true, removed };
}

/**
 * Sweeps a namespace and logs what went; a failed attempt (a dropped connection under load) is tried twice more, then logged and left to
 * the next sweep (never thrown).
 */
export async function sweepNamespaceLogged(
  client: KubeApi,
  namespace: string,
  logger: Logger,
  retryDelayMillis = 1000,
): Promise<NamespaceSweepResult | undefined> {
  let result: NamespaceSweepResult | undefined;
  for (let attempt = 1; attempt <= 3 && !result; attempt++) {
    result = await sweepNamespace(client, namespace).catch(async (error: unknown) => {
      logger.warn(
        { namespace, attempt, err: apiErrorMessage(error) },
        attempt < 3 ? "namespace sweep failed; trying again" : "namespace sweep failed; the next sweep tries again",
      );
      if (attempt < 3) await new Promise((resolve) => setTimeout(resolve, retryDelayMillis));
      return undefined;
    });
  }
  if (result?.swept && result.removed.length > 0)
    logger.info({ namespace, removed: result.removed }, "no captf objects left in the namespace: removed what captf made there");
  return result;
}

/** The wait until a namespace's next periodic sweep: the sync period plus up to 10% (apimachinery's `wait.Jitter(period, 0.1)`). */
export function nextSweepMillis(syncPeriodMillis: number, random: () => number = Math.random): number {
  return Math.round(syncPeriodMillis * (1 + 0.1 * random()));
}

/**
 * The periodic sweep as a leader-only controller keyed by namespace: every namespace where captf's
 * ServiceAccount or RoleBinding exists is swept when the caches first list it (the sweep at start),
 * then again after each `--sync-period` (jittered), so what a crash left between a finalizer's
 * removal and its sweep does not stay.
 */
export function namespaceSweepController(client: KubeApi, options: { syncPeriodMillis: number; random?: () => number }): Controller {
  const managed = `${labels.managed}=true`;
  const namespaceOf = (object: { metadata?: { namespace?: string } }) => (object.metadata?.namespace ? [object.metadata.namespace] : []);
  // Only a new namespace starts a sweep; the periodic requeue does the rest.
  const created = (_object: unknown, event: string) => event === "add";
  return {
    name: "namespace-sweep",
    kind: "Namespace",
    concurrency: 1,
    watches: [
      { type: builtinTypes.serviceAccount, labelSelector: managed, map: namespaceOf, predicate: created },
      { type: builtinTypes.roleBinding, labelSelector: managed, map: namespaceOf, predicate: created },
    ],
    async reconcile(_key, context) {
      const result = await sweepNamespaceLogged(client, context.name, context.logger);
      // A swept namespace has nothing of captf left to look after until captf makes something there again.
      return result?.swept ? {} : { requeueAfterMillis: nextSweepMillis(options.syncPeriodMillis, options.random) };
    },
  };
}
