/**
 * The Kubernetes and Cluster API v1beta2 types the v1alpha1 kinds embed, as structural schemas.
 * They are spelled out in full because a structural schema prunes every field it does not
 * declare: a securityContext field missing here would be dropped silently, never validated.
 */
import { Type, type Static } from "@sinclair/typebox";
import { addressTypeOrder } from "@captf/contract";
import { maxConditions } from "@captf/contract/api";
import { runnerUid } from "./defaults.js";
import { Int32, Int64, Quantity, QuantityMap, StringEnum, StringMap, Timestamp, atomicList, cel, embedded, mapList } from "./schema.js";

const atomicMap = { "x-kubernetes-map-type": "atomic" } as const;

// ---- metav1 ----

export const ConditionSchema = Type.Object(
  {
    type: Type.String({
      description: "Type of the condition, in CamelCase (e.g. Ready).",
      maxLength: 316,
      pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    }),
    status: StringEnum(["True", "False", "Unknown"] as const, { description: "Status of the condition." }),
    observedGeneration: Type.Optional(Int64({ description: "The metadata.generation the condition was computed for.", minimum: 0 })),
    lastTransitionTime: Timestamp({ description: "When the status last changed." }),
    reason: Type.String({
      description: "Why the condition has its status, a CamelCase identifier.",
      minLength: 1,
      maxLength: 1024,
      pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    }),
    message: Type.String({ description: "Details for a human; never holds a variable value.", maxLength: 32768 }),
  },
  { description: "One aspect of the object's state (metav1.Condition).", ...embedded("metav1.Condition") },
);
export type Condition = Static<typeof ConditionSchema>;

/** `status.conditions`: keyed by type, at most {@link maxConditions}. */
export function Conditions(description: string) {
  return Type.Array(ConditionSchema, { description, maxItems: maxConditions, ...mapList("type") });
}

export const LabelSelectorRequirementSchema = Type.Object(
  {
    key: Type.String({ description: "The label key the requirement applies to." }),
    operator: Type.String({ description: "How the key relates to the values: In, NotIn, Exists or DoesNotExist." }),
    values: Type.Optional(
      Type.Array(Type.String(), { description: "Values for In and NotIn; empty for Exists and DoesNotExist.", ...atomicList }),
    ),
  },
  { description: "One label requirement of a selector." },
);

export const LabelSelectorSchema = Type.Object(
  {
    matchExpressions: Type.Optional(
      Type.Array(LabelSelectorRequirementSchema, { description: "Requirements, all of which must hold.", ...atomicList }),
    ),
    matchLabels: Type.Optional(StringMap({ description: "Labels that must all be present with these values." })),
  },
  {
    description: "A label query (metav1.LabelSelector). An empty selector matches everything.",
    ...atomicMap,
    ...embedded("metav1.LabelSelector"),
  },
);
export type LabelSelector = Static<typeof LabelSelectorSchema>;

// ---- corev1 ----

export const LocalObjectReferenceSchema = Type.Object(
  { name: Type.String({ description: "Name of the object in the same namespace.", minLength: 1, maxLength: 253 }) },
  { description: "A reference to an object in the same namespace.", ...atomicMap, ...embedded("corev1.LocalObjectReference") },
);

const KeySelectorFields = {
  key: Type.String({ description: "The key to select." }),
  name: Type.Optional(Type.String({ description: "Name of the referenced object." })),
  optional: Type.Optional(Type.Boolean({ description: "Whether the object or its key may be missing." })),
};

export const EnvVarSourceSchema = Type.Object(
  {
    configMapKeyRef: Type.Optional(Type.Object(KeySelectorFields, { description: "A key of a ConfigMap.", ...atomicMap })),
    secretKeyRef: Type.Optional(Type.Object(KeySelectorFields, { description: "A key of a Secret in the pod's namespace.", ...atomicMap })),
    fieldRef: Type.Optional(
      Type.Object(
        {
          apiVersion: Type.Optional(Type.String({ description: "Version of the schema the field path is written in; v1 when unset." })),
          fieldPath: Type.String({ description: "Path of the pod field to select." }),
        },
        { description: "A field of the pod.", ...atomicMap },
      ),
    ),
    resourceFieldRef: Type.Optional(
      Type.Object(
        {
          containerName: Type.Optional(Type.String({ description: "The container whose resource is read." })),
          divisor: Type.Optional(Quantity({ description: "Output format of the exposed resource; 1 when unset." })),
          resource: Type.String({ description: "The resource to select, e.g. limits.memory." }),
        },
        { description: "A resource limit or request of the container.", ...atomicMap },
      ),
    ),
    fileKeyRef: Type.Optional(
      Type.Object(
        {
          key: Type.String({ description: "The key within the env file." }),
          path: Type.String({ description: "Relative path of the env file within the volume." }),
          volumeName: Type.String({ description: "The volume holding the env file." }),
          optional: Type.Optional(Type.Boolean({ description: "Whether the file or key may be missing." })),
        },
        { description: "A key of an env file in a volume.", ...atomicMap },
      ),
    ),
  },
  { description: "Where the variable's value comes from; cannot be used together with value." },
);

export const EnvVarSchema = Type.Object(
  {
    name: Type.String({
      description: "Name of the environment variable. Names starting with TF_ or KUBE_ are rejected: the runner owns them.",
    }),
    value: Type.Optional(Type.String({ description: "The value; $(VAR) references to earlier variables are expanded." })),
    valueFrom: Type.Optional(EnvVarSourceSchema),
  },
  { description: "One environment variable of the main container (corev1.EnvVar).", ...embedded("corev1.EnvVar") },
);
export type EnvVar = Static<typeof EnvVarSchema>;

export const ResourceRequirementsSchema = Type.Object(
  {
    claims: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({ description: "Name of a pod resource claim." }),
          request: Type.Optional(Type.String({ description: "The request of the claim to use." })),
        }),
        { description: "Dynamic resource claims the container uses.", ...mapList("name") },
      ),
    ),
    limits: Type.Optional(QuantityMap({ description: "Upper bounds on compute resources." })),
    requests: Type.Optional(QuantityMap({ description: "Compute resources the scheduler reserves." })),
  },
  {
    description:
      "Compute resources of the main container (corev1.ResourceRequirements), replacing the built-in requests (250m CPU, 512Mi " +
      "memory) and limit (2Gi memory) as a whole.",
    ...embedded("corev1.ResourceRequirements"),
  },
);
export type ResourceRequirements = Static<typeof ResourceRequirementsSchema>;

const ProfileFields = {
  type: Type.String({ description: "Profile kind: RuntimeDefault, Localhost or Unconfined (Unconfined is rejected)." }),
  localhostProfile: Type.Optional(Type.String({ description: "Path of a profile preloaded on the node, for type Localhost." })),
};

const SELinuxOptionsSchema = Type.Object(
  {
    level: Type.Optional(Type.String({ description: "SELinux level label." })),
    role: Type.Optional(Type.String({ description: "SELinux role label (rejected: not allowed by the baseline Pod Security profile)." })),
    type: Type.Optional(
      Type.String({
        description: "SELinux type label; only container_t, container_init_t, container_kvm_t and container_engine_t are accepted.",
      }),
    ),
    user: Type.Optional(Type.String({ description: "SELinux user label (rejected: not allowed by the baseline Pod Security profile)." })),
  },
  { description: "SELinux context." },
);

const WindowsOptionsSchema = Type.Object(
  {
    gmsaCredentialSpec: Type.Optional(Type.String({ description: "Inlined GMSA credential spec." })),
    gmsaCredentialSpecName: Type.Optional(Type.String({ description: "Name of the GMSA credential spec." })),
    hostProcess: Type.Optional(Type.Boolean({ description: "Run as a Windows host process (true is rejected)." })),
    runAsUserName: Type.Optional(Type.String({ description: "Windows user to run as." })),
  },
  { description: "Windows-specific settings." },
);

export const SecurityContextSchema = Type.Object(
  {
    allowPrivilegeEscalation: Type.Optional(
      Type.Boolean({ description: "Whether a process may gain more privileges than its parent (true is rejected)." }),
    ),
    appArmorProfile: Type.Optional(Type.Object(ProfileFields, { description: "AppArmor profile." })),
    capabilities: Type.Optional(
      Type.Object(
        {
          add: Type.Optional(Type.Array(Type.String(), { description: "Capabilities to add (any entry is rejected).", ...atomicList })),
          drop: Type.Optional(Type.Array(Type.String(), { description: "Capabilities to drop.", ...atomicList })),
        },
        { description: "POSIX capabilities to add or drop." },
      ),
    ),
    privileged: Type.Optional(Type.Boolean({ description: "Run privileged (true is rejected)." })),
    procMount: Type.Optional(Type.String({ description: "proc mount type (Unmasked is rejected)." })),
    readOnlyRootFilesystem: Type.Optional(Type.Boolean({ description: "Mount the root filesystem read-only (false is rejected)." })),
    runAsGroup: Type.Optional(Int64({ description: "GID of the container process." })),
    runAsNonRoot: Type.Optional(Type.Boolean({ description: "Require a non-root user (false is rejected)." })),
    runAsUser: Type.Optional(Int64({ description: "UID of the container process (0 is rejected)." })),
    seLinuxOptions: Type.Optional(SELinuxOptionsSchema),
    seccompProfile: Type.Optional(Type.Object(ProfileFields, { description: "Seccomp profile." })),
    windowsOptions: Type.Optional(WindowsOptionsSchema),
  },
  {
    description:
      "Security context of the main container (corev1.SecurityContext). The Job gets seccomp RuntimeDefault, capabilities drop " +
      "ALL, allowPrivilegeEscalation false and readOnlyRootFilesystem true unless this sets them; the container holds cloud " +
      "credentials, so a setting that weakens those is rejected.",
    ...embedded("corev1.SecurityContext"),
  },
);
export type SecurityContext = Static<typeof SecurityContextSchema>;

export const PodSecurityContextSchema = Type.Object(
  {
    appArmorProfile: Type.Optional(Type.Object(ProfileFields, { description: "AppArmor profile." })),
    fsGroup: Type.Optional(Int64({ description: "Supplemental group owning the pod's volumes." })),
    fsGroupChangePolicy: Type.Optional(Type.String({ description: "When volume ownership is changed: OnRootMismatch or Always." })),
    runAsGroup: Type.Optional(Int64({ description: "GID of the pod's processes." })),
    runAsNonRoot: Type.Optional(Type.Boolean({ description: "Require a non-root user (false is rejected)." })),
    runAsUser: Type.Optional(Int64({ description: "UID of the pod's processes (0 is rejected)." })),
    seLinuxChangePolicy: Type.Optional(
      Type.String({ description: "How the SELinux label is applied to volumes: Recursive or MountOption." }),
    ),
    seLinuxOptions: Type.Optional(SELinuxOptionsSchema),
    seccompProfile: Type.Optional(Type.Object(ProfileFields, { description: "Seccomp profile." })),
    supplementalGroups: Type.Optional(Type.Array(Int64(), { description: "Extra GIDs of the pod's processes.", ...atomicList })),
    supplementalGroupsPolicy: Type.Optional(Type.String({ description: "How supplemental groups are computed: Merge or Strict." })),
    sysctls: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({ description: "Name of the sysctl." }),
          value: Type.String({ description: "Value of the sysctl." }),
        }),
        { description: "Namespaced sysctls; only the Pod Security safe set is accepted.", ...atomicList },
      ),
    ),
    windowsOptions: Type.Optional(WindowsOptionsSchema),
  },
  {
    description:
      `Security context of the Job pod (corev1.PodSecurityContext). The Job gets seccomp RuntimeDefault and fsGroup ` +
      `${runnerUid} (the runner's UID) unless this sets them; the same hardening rules as for the container apply.`,
    ...embedded("corev1.PodSecurityContext"),
  },
);
export type PodSecurityContext = Static<typeof PodSecurityContextSchema>;

// ---- Cluster API v1beta2 ----

export const ApiEndpointSchema = Type.Object(
  {
    host: Type.Optional(Type.String({ description: "Hostname or IP address of the API server.", minLength: 1, maxLength: 512 })),
    port: Type.Optional(Int32({ description: "Port of the API server.", minimum: 1, maximum: 65535 })),
  },
  { ...cel({ rule: "has(self.host) == has(self.port)", message: "host and port must be set together" }) },
);
export type ApiEndpoint = Static<typeof ApiEndpointSchema>;

export const MachineAddressSchema = Type.Object(
  {
    type: StringEnum(
      [
        "Hostname",
        "ExternalIP",
        "InternalIP",
        "ExternalDNS",
        "InternalDNS",
      ] as const satisfies readonly (typeof addressTypeOrder)[number][],
      {
        description: "The Cluster API address type.",
      },
    ),
    address: Type.String({ description: "The address.", minLength: 1, maxLength: 256 }),
  },
  { description: "One address of an instance (clusterv1.MachineAddress)." },
);
export type MachineAddress = Static<typeof MachineAddressSchema>;

export const FailureDomainSchema = Type.Object(
  {
    name: Type.String({ description: "Name of the failure domain.", minLength: 1, maxLength: 256 }),
    controlPlane: Type.Optional(Type.Boolean({ description: "Whether control-plane machines may be placed in it." })),
    attributes: Type.Optional(StringMap({ description: "Free-form attributes the module reports." })),
  },
  { description: "One failure domain (clusterv1.FailureDomain)." },
);
export type FailureDomain = Static<typeof FailureDomainSchema>;

/** The metadata a template copies onto the object it creates (clusterv1.ObjectMeta). */
export const TemplateObjectMetaSchema = Type.Object(
  {
    labels: Type.Optional(StringMap({ description: "Labels copied onto the created object." })),
    annotations: Type.Optional(StringMap({ description: "Annotations copied onto the created object." })),
  },
  { description: "Metadata copied onto the object created from the template. Mutable." },
);
export type TemplateObjectMeta = Static<typeof TemplateObjectMetaSchema>;
