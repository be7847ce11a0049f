/**
 * What the manager and the runner may do, each rule with the reason it exists: the ClusterRoles
 * of the install manifests are rendered from these tables, and
 * docs/installation.md lists them (a test keeps the page in step).
 */
import type { V1PolicyRule } from "@kubernetes/client-node";
import { apiGroup } from "@captf/contract/api";
import { kindDefinitions } from "../api/kinds.js";
import { clusterApiCoordinates } from "../webhooks/facts.js";

export interface Permission {
  apiGroup: string;
  resources: readonly string[];
  verbs: readonly string[];
  resourceNames?: readonly string[];
  /** Who uses it, for the docs. */
  why: string;
}

export const workspacePlurals = ["terraformclusters", "terraformmachines", "terraformmachinepools"] as const;
const allPlurals = kindDefinitions.map((definition) => definition.plural);
/** The kinds whose status a controller writes. */
const statusPlurals = [
  ...workspacePlurals,
  "terraformclusteridentities",
  "terraformmachinetemplates",
  "terraformnotificationreceivers",
].map((plural) => `${plural}/status`);

/** The manager's ClusterRole: every namespace it reconciles in, and its own for the leader election Lease. */
export const managerPermissions: readonly Permission[] = [
  {
    apiGroup,
    resources: allPlurals,
    verbs: ["get", "list", "watch"],
    why:
      "informers, live reads in a reconcile pass, the webhooks' lookups of an identity's users, the TerraformModulePolicies " +
      "read before a Job starts, the TerraformNotificationReceivers read when an event is recorded",
  },
  {
    apiGroup,
    resources: workspacePlurals,
    verbs: ["patch"],
    why:
      "the finalizer, the providerID a TerraformMachine gets once, a pool's providerID and providerIDList, and the shard " +
      "label (captf.io/shard) with --shards > 1",
  },
  {
    apiGroup,
    resources: statusPlurals,
    verbs: ["patch"],
    why:
      "one status patch per pass (conditions, activeJob, lastRun, contract fields); an identity's Ready and namespaces; a " +
      "machine template's capacity, nodeInfo and conditions; a notification receiver's last delivery and failure",
  },
  {
    apiGroup,
    resources: workspacePlurals.map((plural) => `${plural}/finalizers`),
    verbs: ["update"],
    why: "Jobs owned with blockOwnerDeletion (OwnerReferencesPermissionEnforcement)",
  },
  {
    apiGroup: clusterApiCoordinates.group,
    resources: ["clusters"],
    verbs: ["get", "list", "watch"],
    why: "the Cluster API owners an object's inputs come from",
  },
  {
    apiGroup: clusterApiCoordinates.group,
    resources: ["machines", "machinepools"],
    verbs: ["get", "list", "watch", "patch"],
    why:
      "the owners of machines and pools; the remediate-machine annotation on a Machine, the replicas write-back and its " +
      "replicas-managed-by claim on an autoscaled MachinePool",
  },
  {
    apiGroup: "batch",
    resources: ["jobs"],
    verbs: ["get", "list", "watch", "create", "patch", "delete"],
    why: "the Jobs that run modules: created, adopted, marked bookkept, deleted when stuck",
  },
  {
    apiGroup: "",
    resources: ["pods"],
    verbs: ["get", "list", "watch", "delete"],
    why:
      "the termination message (run result) of a Job's Pod (its Pods cached, watched by label), never logged; whether the " +
      "runner pod holding a state lock is gone; a Pod whose image was not pulled for 2 minutes is deleted so its Job fails",
  },
  {
    apiGroup: "",
    resources: ["secrets"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    why:
      "state Secrets (read, inputs hash, cleanup), durable inputs, per-run Secrets, bootstrap data, variablesFrom (those " +
      "labelled captf.io/variables=true watched, metadata only), identity Secrets and their credential mirrors (watched), a " +
      "machine template's imagePullSecrets (its image's config is read over the registry API), a TerraformModulePolicy's key " +
      "Secrets and the Job's imagePullSecrets (the image's signatures are read over the registry API), a " +
      "TerraformNotificationReceiver's URL and signing key Secrets (never logged)",
  },
  {
    apiGroup: "",
    resources: ["configmaps"],
    verbs: ["get", "list", "watch"],
    why: "variablesFrom ConfigMaps (read live; those labelled captf.io/variables=true watched, metadata only, so a change starts a pass)",
  },
  {
    apiGroup: "",
    resources: ["namespaces"],
    verbs: ["get"],
    why:
      "a namespace's labels against an identity's allowedNamespaces, a TerraformModulePolicy's and a " +
      "TerraformNotificationReceiver's namespaceSelector",
  },
  {
    apiGroup: "coordination.k8s.io",
    resources: ["leases"],
    verbs: ["get", "list", "watch", "create", "update", "delete"],
    why:
      "run leases and the cluster operation gate in each namespace (captf's Leases and the backend's state locks cached, " +
      "watched by label); the leader election Lease controller-leader-election-captf and, with --shards > 1, the shard Leases " +
      "captf-shard-<i> and captf-shard-member-<hash> in its own; deleting the backend's free state lock Lease " +
      "lock-tfstate-default-<suffix> once the state is gone, and captf's Leases in the namespace sweep",
  },
  {
    apiGroup: "",
    resources: ["serviceaccounts"],
    verbs: ["get", "list", "watch", "create", "delete"],
    why:
      "the captf-runner ServiceAccount of each namespace with objects (cached, watched by name), removed by the namespace " +
      "sweep once none is left",
  },
  {
    apiGroup: "rbac.authorization.k8s.io",
    resources: ["rolebindings"],
    verbs: ["get", "list", "watch", "create", "update", "delete"],
    why:
      "the captf-runner RoleBinding of each namespace with objects (cached, watched by name), removed by the namespace sweep " +
      "once none is left",
  },
  {
    apiGroup: "rbac.authorization.k8s.io",
    resources: ["clusterroles"],
    verbs: ["bind"],
    resourceNames: ["captf-runner"],
    why: "binding captf-runner without holding its permissions everywhere",
  },
  { apiGroup: "events.k8s.io", resources: ["events"], verbs: ["create"], why: "events on the objects it reconciles" },
  {
    apiGroup: "",
    resources: ["events"],
    verbs: ["list"],
    why: "the Job controller's FailedCreate events on a Job left without a Pod, naming the LimitRange or quota that refused it",
  },
  { apiGroup: "authentication.k8s.io", resources: ["tokenreviews"], verbs: ["create"], why: "authenticating /metrics scrapers" },
  {
    apiGroup: "authorization.k8s.io",
    resources: ["subjectaccessreviews"],
    verbs: ["create"],
    why: "authorizing /metrics scrapers; the identity webhook asks whether an author may read a Secret",
  },
];

/** The ClusterRole `captf-runner`, bound in each namespace to the runner's ServiceAccount. */
export const runnerPermissions: readonly Permission[] = [
  {
    apiGroup: "",
    resources: ["secrets"],
    verbs: ["get", "list", "create", "update", "delete"],
    why: "OpenTofu's kubernetes backend: the state Secrets",
  },
  {
    apiGroup: "coordination.k8s.io",
    resources: ["leases"],
    verbs: ["get", "create", "update"],
    why: "OpenTofu's kubernetes backend: the state lock",
  },
  { apiGroup: "events.k8s.io", resources: ["events"], verbs: ["create"], why: "the runner's progress events (--runner-events)" },
];

/** The namespaced kinds users write; identities are cluster-scoped credentials, left to cluster administrators. */
const namespacedPlurals = kindDefinitions.filter((definition) => definition.scope === "Namespaced").map((definition) => definition.plural);

/** `captf-view`, aggregated into the built-in `view` (and so `edit` and `admin`): read every captf object. */
export const viewPermissions: readonly Permission[] = [
  {
    apiGroup,
    resources: [...allPlurals, ...statusPlurals],
    verbs: ["get", "list", "watch"],
    why: "reading captf objects and their status",
  },
];

/** `captf-edit`, aggregated into the built-in `edit` and `admin`: write the namespaced captf objects, not their status. */
export const editPermissions: readonly Permission[] = [
  {
    apiGroup,
    resources: namespacedPlurals,
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
    why: "creating, changing and deleting clusters, machines, pools and their templates",
  },
];

/**
 * `captf-plan-approver`, aggregated into nothing: bind it to whoever approves plans. RBAC cannot narrow a
 * patch to one annotation: it grants `patch` on the three kinds that run plans, and the custom verb
 * `approve`, by which the ValidatingAdmissionPolicy captf-plan-approver keeps a requester who may
 * approve but not update to that annotation.
 */
export const planApproverPermissions: readonly Permission[] = [
  {
    apiGroup,
    resources: workspacePlurals,
    verbs: ["get", "list", "watch", "patch", "approve"],
    why: "reading a pending plan (status.plan) and setting captf.io/approve-plan to its hash, and only that (approve)",
  },
  {
    apiGroup: "events.k8s.io",
    resources: ["events"],
    verbs: ["create"],
    why: "the PlanApprovalRequested event `kubectl captf plan approve` records on the object",
  },
];

export function policyRules(permissions: readonly Permission[]): V1PolicyRule[] {
  return permissions.map((permission) => ({
    apiGroups: [permission.apiGroup],
    resources: [...permission.resources],
    ...(permission.resourceNames ? { resourceNames: [...permission.resourceNames] } : {}),
    verbs: [...permission.verbs],
  }));
}

/** The Markdown table of one role's rules. */
export function renderPermissionTable(permissions: readonly Permission[]): string {
  const rows = permissions.map((permission) => {
    const resources = permission.resources.map((resource) => `\`${resource}\``).join(", ");
    const names = permission.resourceNames ? ` (only ${permission.resourceNames.map((name) => `\`${name}\``).join(", ")})` : "";
    return (
      `| ${permission.apiGroup === "" ? "core" : `\`${permission.apiGroup}\``} | ${resources}${names} | ` +
      `${permission.verbs.join(", ")} | ${permission.why} |`
    );
  });
  return ["| API group | Resources | Verbs | Why |", "| --- | --- | --- | --- |", ...rows].join("\n");
}
