// Valid objects of every kind, one minimal and one setting every spec field, shared by the
// API server suite and the webhook tests. Each call returns a fresh copy to mutate.
import { groupVersion, kinds } from "@captf/contract/api";
import type { JobPolicy } from "./workspace.js";
import type { TerraformCluster } from "./terraformcluster.js";
import type { TerraformMachine } from "./terraformmachine.js";
import type { TerraformMachinePool } from "./terraformmachinepool.js";
import type { TerraformClusterTemplate, TerraformMachinePoolTemplate, TerraformMachineTemplate } from "./templates.js";
import type { TerraformClusterIdentity } from "./terraformclusteridentity.js";

export const clusterImage = "ghcr.io/captf-io/module-images/noop-cluster:v0.1.0-opentofu";
export const machineImage = "ghcr.io/captf-io/module-images/noop-machine:v0.1.0-opentofu";
export const poolImage =
  "registry.example.com:5000/team/noop-machinepool@sha256:3f1c0e9d5a7b2c64e8f1a0b9d7c3e5f2a4b6c8d0e1f3a5b7c9d1e3f5a7b9c1d3";

/** A job policy touching every field, hardened rather than weakened. */
export function fullJobPolicy(): JobPolicy {
  return {
    successfulJobsHistoryLimit: 1,
    failedJobsHistoryLimit: 5,
    activeDeadlineSeconds: 7200,
    lockTimeoutSeconds: 600,
    serviceAccountName: "team-runner",
    imagePullSecrets: [{ name: "ghcr-pull" }],
    resources: { requests: { cpu: "1", memory: "1Gi" }, limits: { memory: "4Gi" }, claims: [{ name: "gpu" }] },
    env: [
      { name: "HTTPS_PROXY", value: "http://proxy.internal:3128" },
      { name: "REGION", valueFrom: { configMapKeyRef: { name: "settings", key: "region", optional: true } } },
      { name: "POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "MEM", valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } } },
      { name: "TOKEN", valueFrom: { secretKeyRef: { name: "token", key: "value" } } },
    ],
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: "RuntimeDefault" },
      appArmorProfile: { type: "RuntimeDefault" },
      seLinuxOptions: { type: "container_t", level: "s0:c123,c456" },
      procMount: "Default",
    },
    podSecurityContext: {
      fsGroup: 65532,
      fsGroupChangePolicy: "OnRootMismatch",
      runAsNonRoot: true,
      runAsUser: 65532,
      supplementalGroups: [65532],
      seccompProfile: { type: "RuntimeDefault" },
      sysctls: [{ name: "net.ipv4.ip_local_port_range", value: "1024 65000" }],
    },
  };
}

export function minimalCluster(name = "demo"): TerraformCluster {
  return {
    apiVersion: groupVersion,
    kind: kinds.cluster,
    metadata: { name },
    spec: { source: { image: clusterImage }, identityRef: { name: "aws" } },
  };
}

export function fullCluster(name = "demo-full"): TerraformCluster {
  return {
    apiVersion: groupVersion,
    kind: kinds.cluster,
    metadata: { name, labels: { "cluster.x-k8s.io/cluster-name": name } },
    spec: {
      controlPlaneEndpoint: { host: "demo-api.example.com", port: 6443 },
      source: { image: clusterImage, imagePullPolicy: "Always" },
      identityRef: { name: "aws", kind: "TerraformClusterIdentity" },
      jobs: fullJobPolicy(),
      variables: { region: "eu-west-1", node_count: 3, tags: { team: "platform" } },
      variablesFrom: [{ secretRef: { name: "demo-secrets" } }, { configMapRef: { name: "demo-settings" }, optional: true, format: "JSON" }],
      deletionPolicy: "Retain",
      adoptRetainedState: true,
      drift: { intervalSeconds: 900, action: "Remediate" },
      applyPolicy: "Manual",
      maxActiveJobs: 8,
      defaults: {
        identityRef: { name: "aws-machines" },
        jobs: { activeDeadlineSeconds: 3600, imagePullSecrets: [{ name: "ghcr-pull" }] },
        drift: { intervalSeconds: 1800, action: "Report" },
        remediation: { annotateMachine: true, unhealthyThreshold: 2, healthCheckIntervalSeconds: 120 },
        membershipRefreshIntervalSeconds: 30,
        deletionPolicy: "Destroy",
      },
    },
  };
}

export function minimalMachine(name = "demo-md-0-abc"): TerraformMachine {
  return { apiVersion: groupVersion, kind: kinds.machine, metadata: { name }, spec: { source: { image: machineImage } } };
}

export function fullMachine(name = "demo-md-0-full"): TerraformMachine {
  return {
    apiVersion: groupVersion,
    kind: kinds.machine,
    metadata: { name },
    spec: {
      source: { image: machineImage, imagePullPolicy: "IfNotPresent" },
      identityRef: { name: "aws" },
      jobs: fullJobPolicy(),
      variables: { instance_type: "m6i.xlarge", disk_gb: 100 },
      variablesFrom: [{ configMapRef: { name: "machine-settings" } }],
      deletionPolicy: "Destroy",
      adoptRetainedState: false,
      drift: { intervalSeconds: 0 },
      remediation: { annotateMachine: true, unhealthyThreshold: 3, healthCheckIntervalSeconds: 300 },
    },
  };
}

export function minimalPool(name = "demo-mp-0"): TerraformMachinePool {
  return { apiVersion: groupVersion, kind: kinds.machinePool, metadata: { name }, spec: { source: { image: poolImage } } };
}

export function fullPool(name = "demo-mp-full"): TerraformMachinePool {
  return {
    apiVersion: groupVersion,
    kind: kinds.machinePool,
    metadata: { name },
    spec: {
      providerID: "aws:///eu-west-1/asg-demo",
      providerIDList: ["aws:///eu-west-1a/i-0a", "aws:///eu-west-1b/i-0b"],
      source: { image: poolImage },
      identityRef: { name: "local-creds", kind: "Secret" },
      jobs: { lockTimeoutSeconds: 120 },
      variables: { instance_type: "m6i.large" },
      variablesFrom: [{ secretRef: { name: "pool-secrets" }, format: "String", optional: false }],
      deletionPolicy: "Retain",
      adoptRetainedState: true,
      drift: { intervalSeconds: 600, action: "Remediate" },
      membershipRefreshIntervalSeconds: 15,
    },
  };
}

export function clusterTemplate(name = "noop"): TerraformClusterTemplate {
  const { spec } = fullCluster();
  return {
    apiVersion: groupVersion,
    kind: kinds.clusterTemplate,
    metadata: { name },
    spec: { template: { metadata: { labels: { team: "platform" } }, spec } },
  };
}

export function machineTemplate(name = "demo-md-0"): TerraformMachineTemplate {
  const { spec } = fullMachine();
  return {
    apiVersion: groupVersion,
    kind: kinds.machineTemplate,
    metadata: { name },
    spec: { template: { metadata: { annotations: { "example.com/owner": "platform" } }, spec }, capacity: { cpu: "4", memory: "16Gi" } },
  };
}

export function poolTemplate(name = "demo-mp"): TerraformMachinePoolTemplate {
  const { spec } = fullPool();
  delete spec.providerID;
  delete spec.providerIDList;
  return { apiVersion: groupVersion, kind: kinds.machinePoolTemplate, metadata: { name }, spec: { template: { spec } } };
}

export function identity(name = "aws"): TerraformClusterIdentity {
  return {
    apiVersion: groupVersion,
    kind: kinds.clusterIdentity,
    metadata: { name },
    spec: {
      type: "Secret",
      secretRef: { name: "aws", namespace: "captf-system" },
      requiredKeys: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
      allowedNamespaces: {
        list: ["team-a", "team-b"],
        selector: {
          matchLabels: { "captf.io/identity-aws": "true" },
          matchExpressions: [{ key: "env", operator: "In", values: ["prod"] }],
        },
      },
    },
  };
}
