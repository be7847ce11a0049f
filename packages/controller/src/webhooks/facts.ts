/**
 * What some validators need from the API server, looked up by the admission server and handed in
 * as facts: the Cluster API Machines on a TerraformMachine being deleted (and whether its Cluster
 * is paused), the objects that resolve to a TerraformClusterIdentity being deleted, and whether
 * the author of an identity may read its Secret (a SubjectAccessReview). The reading of the
 * listed objects is pure ({@link machineDeletionFactsFrom}, {@link identityUsersFrom}); the
 * lookups are reads against the live API, never a cache, so a just-created user counts.
 */
import { annotations, apiGroup, kinds, labels } from "@captf/contract/api";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { IdentityUser, SecretAccess } from "./terraformclusteridentity.js";
import type { MachineDeletionFacts } from "./terraformmachine.js";
import { apiErrorMessage, isNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi, KubeObject, ResourceType } from "../runtime/kube-client.js";
import { terraformClusterType, terraformMachinePoolType, terraformMachineType } from "../api/resource-types.js";

/** The requester as the AdmissionReview describes it; a SubjectAccessReview asks as exactly this user. */
export interface AdmissionUserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface AdmissionFacts {
  machineDeletion(machine: TerraformMachine): Promise<MachineDeletionFacts>;
  /** Every object, in any namespace and deleting or not, that names the identity. */
  identityUsers(identityName: string): Promise<IdentityUser[]>;
  secretAccess(user: AdmissionUserInfo, secret: { namespace: string; name: string }): Promise<SecretAccess>;
}

import { capiTypes, clusterApiCoordinates } from "../api/cluster-api.js";
export { clusterApiCoordinates };

type AnyObject = {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string>; deletionTimestamp?: unknown };
  spec?: Record<string, unknown>;
};

/** The Machines whose spec.infrastructureRef is this TerraformMachine; the Cluster is the one its cluster-name label names. */
export function machineDeletionFactsFrom(machine: TerraformMachine, machines: readonly unknown[], cluster: unknown): MachineDeletionFacts {
  const name = machine.metadata?.name;
  const referencingMachines = machines.flatMap((item) => {
    const object = item as AnyObject;
    const ref = object.spec?.infrastructureRef as { apiGroup?: string; apiVersion?: string; kind?: string; name?: string } | undefined;
    // v1beta2 names the group; an object converted from v1beta1 may still carry apiVersion.
    const group = ref?.apiGroup ?? ref?.apiVersion?.split("/")[0];
    if (ref?.kind !== kinds.machine || ref.name !== name || group !== apiGroup) return [];
    return [{ name: object.metadata?.name ?? "", deleting: object.metadata?.deletionTimestamp != null }];
  });
  const clusterObject = cluster as AnyObject | undefined;
  const clusterPaused = clusterObject?.spec?.paused === true || clusterObject?.metadata?.annotations?.[annotations.paused] !== undefined;
  return { referencingMachines, clusterPaused: clusterObject !== undefined && clusterPaused };
}

/**
 * The kinds whose objects name an identity, and where. A machine or pool naming none falls back to its TerraformCluster, which is then a
 * user itself.
 */
const identityReferencingKinds = [
  { type: terraformClusterType, paths: [["identityRef"], ["defaults", "identityRef"]] },
  { type: terraformMachineType, paths: [["identityRef"]] },
  { type: terraformMachinePoolType, paths: [["identityRef"]] },
] as const;

function fieldAt(object: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>(
    (value, key) => (value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined),
    object,
  );
}

/** Objects of the listed kinds whose identityRef (kind TerraformClusterIdentity, the default) names the identity, sorted. */
export function identityUsersFrom(identityName: string, listed: Readonly<Partial<Record<string, readonly unknown[]>>>): IdentityUser[] {
  const users: IdentityUser[] = [];
  for (const { type, paths } of identityReferencingKinds) {
    const kind = type.kind;
    for (const item of listed[kind] ?? []) {
      const object = item as AnyObject;
      const named = paths.some((path) => {
        const ref = fieldAt(object.spec, path) as { name?: string; kind?: string } | undefined;
        return ref?.name === identityName && (ref.kind ?? kinds.clusterIdentity) === kinds.clusterIdentity;
      });
      if (named) users.push({ kind, namespace: object.metadata?.namespace ?? "", name: object.metadata?.name ?? "" });
    }
  }
  return users.sort((a, b) => a.kind.localeCompare(b.kind) || a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}

export class FactLookupError extends Error {
  constructor(what: string, cause: unknown) {
    super(`${what}: ${apiErrorMessage(cause)}`, { cause });
    this.name = "FactLookupError";
  }
}

function withTimeout<T>(what: string, timeoutMillis: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FactLookupError(what, new Error(`no answer within ${timeoutMillis} ms`))), timeoutMillis);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export interface KubernetesAdmissionFactsOptions {
  /** Each lookup must answer within this, well inside the webhook's timeoutSeconds; default 5 s. */
  timeoutMillis?: number;
  /** Page size of the lists; default 500. */
  pageSize?: number;
}

/** {@link AdmissionFacts} read from the API server with the manager's credentials. */
export function kubernetesAdmissionFacts(client: KubeApi, options: KubernetesAdmissionFactsOptions = {}): AdmissionFacts {
  const timeoutMillis = options.timeoutMillis ?? 5000;
  const limit = options.pageSize ?? 500;

  /** Every object of `type` in `namespace` (undefined: all namespaces), page by page. */
  async function listAll(type: ResourceType, namespace: string | undefined): Promise<unknown[]> {
    const items: unknown[] = [];
    let token: string | undefined;
    do {
      const page = await client.list(type, namespace, { limit, continue: token });
      items.push(...page.items);
      token = page.metadata?.continue || undefined;
    } while (token);
    return items;
  }

  return {
    async machineDeletion(machine) {
      const namespace = machine.metadata?.namespace ?? "";
      const what = `Machines referencing TerraformMachine ${namespace}/${machine.metadata?.name ?? ""}`;
      return withTimeout(
        what,
        timeoutMillis,
        (async () => {
          let machines: unknown[];
          try {
            machines = await listAll(capiTypes.machine, namespace);
          } catch (error) {
            // Without Cluster API's Machine kind, no Machine can reference it.
            if (!isNotFound(error)) throw new FactLookupError(what, error);
            machines = [];
          }
          const clusterName = machine.metadata?.labels?.[labels.clusterName];
          let cluster: unknown;
          if (clusterName && machines.length > 0) {
            try {
              cluster = await client.get(capiTypes.cluster, namespace, clusterName);
            } catch (error) {
              if (!isNotFound(error)) throw new FactLookupError(`Cluster ${namespace}/${clusterName}`, error);
            }
          }
          return machineDeletionFactsFrom(machine, machines, cluster);
        })(),
      );
    },

    async identityUsers(identityName) {
      const what = `objects using TerraformClusterIdentity ${identityName}`;
      return withTimeout(
        what,
        timeoutMillis,
        (async () => {
          const listed: Record<string, unknown[]> = {};
          await Promise.all(
            identityReferencingKinds.map(async ({ type }) => {
              try {
                listed[type.kind] = await listAll(type, undefined);
              } catch (error) {
                throw new FactLookupError(what, error);
              }
            }),
          );
          return identityUsersFrom(identityName, listed);
        })(),
      );
    },

    async secretAccess(user, secret) {
      const what = `SubjectAccessReview of get Secret ${secret.namespace}/${secret.name}`;
      return withTimeout(
        what,
        timeoutMillis,
        (async () => {
          try {
            const review = await client.create<KubeObject & { spec?: unknown; status?: { allowed?: boolean } }>(
              builtinTypes.subjectAccessReview,
              undefined,
              {
                apiVersion: "authorization.k8s.io/v1",
                kind: "SubjectAccessReview",
                spec: {
                  ...(user.username === undefined ? {} : { user: user.username }),
                  ...(user.uid === undefined ? {} : { uid: user.uid }),
                  ...(user.groups === undefined ? {} : { groups: user.groups }),
                  ...(user.extra === undefined ? {} : { extra: user.extra }),
                  resourceAttributes: {
                    verb: "get",
                    group: "",
                    version: "v1",
                    resource: "secrets",
                    namespace: secret.namespace,
                    name: secret.name,
                  },
                },
              },
            );
            return { allowed: review.status?.allowed === true };
          } catch (error) {
            throw new FactLookupError(what, error);
          }
        })(),
      );
    },
  };
}
