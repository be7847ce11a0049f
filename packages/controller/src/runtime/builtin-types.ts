/** The built-in kinds the manager reads or writes, as {@link ResourceType}s for the JSON client and informers. */
import type { ResourceType } from "./kube-client.js";

const core = (kind: string, plural: string, namespaced = true): ResourceType => ({ group: "", version: "v1", kind, plural, namespaced });

export const builtinTypes = {
  namespace: core("Namespace", "namespaces", false),
  configMap: core("ConfigMap", "configmaps"),
  secret: core("Secret", "secrets"),
  serviceAccount: core("ServiceAccount", "serviceaccounts"),
  pod: core("Pod", "pods"),
  job: { group: "batch", version: "v1", kind: "Job", plural: "jobs", namespaced: true },
  lease: { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true },
  event: { group: "events.k8s.io", version: "v1", kind: "Event", plural: "events", namespaced: true },
  /** The core form of Events, whose field selectors name the object (involvedObject.uid) and the reason. */
  coreEvent: core("Event", "events"),
  roleBinding: { group: "rbac.authorization.k8s.io", version: "v1", kind: "RoleBinding", plural: "rolebindings", namespaced: true },
  tokenReview: { group: "authentication.k8s.io", version: "v1", kind: "TokenReview", plural: "tokenreviews", namespaced: false },
  subjectAccessReview: {
    group: "authorization.k8s.io",
    version: "v1",
    kind: "SubjectAccessReview",
    plural: "subjectaccessreviews",
    namespaced: false,
  },
} as const satisfies Record<string, ResourceType>;
