/**
 * The clusterctl provider assets of captf (`infrastructure-terraform`), rendered from the same
 * sources as config/: `metadata.yaml`, `infrastructure-components.yaml` (config/install.yaml with
 * clusterctl's labels and `${VAR}` variables for the image, the namespace, the replicas and the shards) and the cluster
 * templates (the no-op flavor from e2e/manifests/demo, the two cloud MachinePool flavors and a
 * ClusterClass flavor). `scripts/generate-clusterctl.mjs` writes them under config/clusterctl;
 * a test fails when the files on disk differ.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";
import { parseAllDocuments, stringify } from "yaml";
import { apiGroup as infraGroup, apiVersion as infraVersion, groupVersion as infraGroupVersion } from "@captf/contract/api";
import { capiGroupVersion, capiVersion, kubeadmBootstrapGroup, kubeadmControlPlaneGroup } from "../api/cluster-api.js";
import type { GeneratedFile } from "../api/crds.js";
import { managerVersion } from "../manager-main.js";
import { monitoringObjects } from "../monitoring/monitoring-files.js";
import { defaultManagerImage, defaultInstallOptions, installPath, monitoringOptions, renderInstallFiles } from "./manifests.js";

type AnyObject = Record<string, unknown>;
/** A manifest document of clusterctl's files: its metadata typed, the rest as it is written. */
export type ManifestObject = KubernetesObject & { metadata: V1ObjectMeta; spec?: AnyObject; [field: string]: unknown };

/** The provider as clusterctl names it: `--infrastructure terraform`, label value `infrastructure-terraform`. */
export const clusterctlProvider = { name: "terraform", type: "InfrastructureProvider", label: "infrastructure-terraform" } as const;
/** Where the generator writes the assets, relative to the package root. */
export const clusterctlDirectory = "config/clusterctl";
/** The components' variables, with their defaults. */
export const componentVariables = {
  image: "CAPTF_IMAGE",
  namespace: "CAPTF_NAMESPACE",
  replicas: "CAPTF_REPLICAS",
  shards: "CAPTF_SHARDS",
} as const;
/** The flavors: `clusterctl generate cluster --flavor <name>` ("" is the default template). */
export const clusterctlFlavors = ["", "gcp-machinepool", "azure-machinepool", "clusterclass"] as const;
export type ClusterctlFlavor = (typeof clusterctlFlavors)[number];

/** The label clusterctl puts on every object of a provider (the CRDs carry clusterctl's move label from api/crds.ts). */
const providerLabel = "cluster.x-k8s.io/provider";
const moduleTag = `v${managerVersion}-opentofu`;

const header = (source: string) =>
  `# Generated from ${source} by packages/controller/scripts/generate-clusterctl.mjs. Do not edit: run \`pnpm --filter ` +
  `@captf/controller gen\`.\n`;

function documents(objects: readonly unknown[]): string {
  return objects.map((object) => stringify(object, { lineWidth: 0 })).join("---\n");
}

export function metadataObject(): AnyObject {
  const [major, minor] = managerVersion.split(".").map(Number);
  return { apiVersion: "clusterctl.cluster.x-k8s.io/v1alpha3", kind: "Metadata", releaseSeries: [{ major, minor, contract: capiVersion }] };
}

/**
 * config/monitoring's objects in `${CAPTF_NAMESPACE}`, for `clusterctl generate yaml --from`: every other
 * `${` (the dashboard's `${datasource}`) is escaped as `$${`, which clusterctl turns back into `${`.
 */
export function monitoringDocuments(): string {
  const namespace = `\${${componentVariables.namespace}:=${defaultInstallOptions.namespace}}`;
  const text = documents(monitoringObjects(monitoringOptions({ ...defaultInstallOptions, namespace })));
  return text.replace(/\$\{(?!CAPTF_NAMESPACE:=)/g, () => "$${");
}

/** config/install.yaml's objects for `${CAPTF_IMAGE}` in `${CAPTF_NAMESPACE}`, each labelled for clusterctl. */
export function infrastructureComponentObjects(): ManifestObject[] {
  const options = {
    image: `\${${componentVariables.image}:=${defaultManagerImage}}`,
    namespace: `\${${componentVariables.namespace}:=${defaultInstallOptions.namespace}}`,
    replicas: `\${${componentVariables.replicas}:=1}`,
    shards: `\${${componentVariables.shards}:=1}`,
  };
  const install = renderInstallFiles(options).find((file) => file.path === installPath)!;
  return parseAllDocuments(install.content).map((document) => {
    const object = document.toJS() as ManifestObject;
    object.metadata.labels = { ...object.metadata.labels, [providerLabel]: clusterctlProvider.label };
    return object;
  });
}

// The no-op flavor: the demo's Cluster, MachineDeployment and MachinePool (e2e/manifests/demo),
// renamed after ${CLUSTER_NAME} in ${NAMESPACE}, under the identity ${CAPTF_IDENTITY_NAME}; the demo's
// identity and canary Secrets stay there.
const demoFiles = ["10-cluster.yaml", "20-machinedeployment.yaml", "30-machinepool.yaml"];
const demoName = "demo";

function templatedDemo(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((item) => templatedDemo(item, key));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, templatedDemo(item, name)]));
  if (key === "replicas") return "${WORKER_MACHINE_COUNT:=3}";
  if (key === "version") return "${KUBERNETES_VERSION}";
  if (typeof value !== "string") return value;
  if (value === demoName) return key === "namespace" ? "${NAMESPACE}" : "${CLUSTER_NAME}";
  if (value.startsWith(`${demoName}-`)) return `\${CLUSTER_NAME}${value.slice(demoName.length)}`;
  if (key === "value" && value.startsWith("#cloud-config")) return "#cloud-config\n";
  return value;
}

export function noopFlavorObjects(demoDirectory: string): ManifestObject[] {
  return demoFiles
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(demoDirectory, file), "utf8")).map((document) => document.toJS() as ManifestObject),
    )
    .filter((object) => object.kind !== "Namespace" && !(object.kind === "Secret" && object.metadata.labels?.["captf.io/variables"]))
    .map((object) => {
      const copy = templatedDemo(object) as ManifestObject;
      if (copy.kind === "TerraformCluster") {
        copy.spec!.identityRef = { name: "${CAPTF_IDENTITY_NAME}" };
        delete copy.spec!.variablesFrom;
      }
      return copy;
    });
}

const meta = (name: string, extra: AnyObject = {}) => ({ name, namespace: "${NAMESPACE}", ...extra });
const clusterLabel = { "cluster.x-k8s.io/cluster-name": "${CLUSTER_NAME}" };
const clusterNetwork = {
  pods: { cidrBlocks: ["${POD_CIDR:=192.168.0.0/16}"] },
  services: { cidrBlocks: ["${SERVICE_CIDR:=10.96.0.0/12}"] },
};

/**
 * A Cluster on a TerraformCluster run from `${CAPTF_CLUSTER_MODULE_IMAGE}` under the identity `${CAPTF_IDENTITY_NAME}`, with a
 * KubeadmControlPlane.
 */
function cloudClusterObjects(): AnyObject[] {
  return [
    {
      apiVersion: capiGroupVersion,
      kind: "Cluster",
      metadata: meta("${CLUSTER_NAME}"),
      spec: {
        clusterNetwork,
        controlPlaneRef: { apiGroup: kubeadmControlPlaneGroup, kind: "KubeadmControlPlane", name: "${CLUSTER_NAME}-control-plane" },
        infrastructureRef: { apiGroup: infraGroup, kind: "TerraformCluster", name: "${CLUSTER_NAME}" },
      },
    },
    {
      apiVersion: infraGroupVersion,
      kind: "TerraformCluster",
      metadata: meta("${CLUSTER_NAME}"),
      spec: { source: { image: "${CAPTF_CLUSTER_MODULE_IMAGE}" }, identityRef: { name: "${CAPTF_IDENTITY_NAME}" } },
    },
    {
      apiVersion: `${kubeadmControlPlaneGroup}/${capiVersion}`,
      kind: "KubeadmControlPlane",
      metadata: meta("${CLUSTER_NAME}-control-plane"),
      spec: {
        replicas: "${CONTROL_PLANE_MACHINE_COUNT:=3}",
        version: "${KUBERNETES_VERSION}",
        machineTemplate: {
          spec: { infrastructureRef: { apiGroup: infraGroup, kind: "TerraformMachineTemplate", name: "${CLUSTER_NAME}-control-plane" } },
        },
        kubeadmConfigSpec: { format: "cloud-config" },
      },
    },
    {
      apiVersion: infraGroupVersion,
      kind: "TerraformMachineTemplate",
      metadata: meta("${CLUSTER_NAME}-control-plane"),
      spec: { template: { spec: { source: { image: "${CAPTF_CONTROL_PLANE_MODULE_IMAGE}" } } } },
    },
  ];
}

/** A MachinePool of `${WORKER_MACHINE_COUNT}` on a cloud pool module, joined by a KubeadmConfig. */
function cloudPoolObjects(module: "gcp-machinepool" | "azure-machinepool", variables: AnyObject): AnyObject[] {
  const name = "${CLUSTER_NAME}-pool-0";
  return [
    {
      apiVersion: capiGroupVersion,
      kind: "MachinePool",
      metadata: meta(name),
      spec: {
        clusterName: "${CLUSTER_NAME}",
        replicas: "${WORKER_MACHINE_COUNT:=3}",
        template: {
          spec: {
            clusterName: "${CLUSTER_NAME}",
            version: "${KUBERNETES_VERSION}",
            bootstrap: { configRef: { apiGroup: kubeadmBootstrapGroup, kind: "KubeadmConfig", name } },
            infrastructureRef: { apiGroup: infraGroup, kind: "TerraformMachinePool", name },
          },
        },
      },
    },
    {
      apiVersion: `${kubeadmBootstrapGroup}/${capiVersion}`,
      kind: "KubeadmConfig",
      metadata: meta(name),
      spec: { format: "cloud-config" },
    },
    {
      apiVersion: infraGroupVersion,
      kind: "TerraformMachinePool",
      metadata: meta(name, { labels: clusterLabel }),
      spec: { source: { image: `\${CAPTF_MODULE_REGISTRY:=ghcr.io/captf-io}/${module}:${moduleTag}` }, variables },
    },
  ];
}

/** The ClusterClass of the `clusterclass` flavor; clusterctl reads it from `clusterclass-<name>.yaml` beside the templates. */
export const clusterClassName = "captf-noop";

/** A ClusterClass on the no-op modules (cluster, MachineDeployment and MachinePool classes) with its templates. */
function clusterClassObjects(): AnyObject[] {
  const className = clusterClassName;
  const ref = (kind: string, name: string, group = infraGroup, version = infraVersion) => ({
    templateRef: { apiVersion: `${group}/${version}`, kind, name },
  });
  // As the default flavor's: the no-op module images are the e2e's (<registry>/captf/noop-<role>).
  const noopImage = (role: string) => `\${CAPTF_MODULE_REGISTRY}/captf/noop-${role}:${moduleTag}`;
  const bootstrap = ref("KubeadmConfigTemplate", `${className}-worker`, kubeadmBootstrapGroup, capiVersion);
  return [
    {
      apiVersion: capiGroupVersion,
      kind: "ClusterClass",
      metadata: meta(className),
      spec: {
        infrastructure: ref("TerraformClusterTemplate", className),
        controlPlane: {
          ...ref("KubeadmControlPlaneTemplate", className, kubeadmControlPlaneGroup, capiVersion),
          machineInfrastructure: ref("TerraformMachineTemplate", `${className}-control-plane`),
        },
        workers: {
          machineDeployments: [
            { class: "default-worker", bootstrap, infrastructure: ref("TerraformMachineTemplate", `${className}-worker`) },
          ],
          machinePools: [{ class: "default-pool", bootstrap, infrastructure: ref("TerraformMachinePoolTemplate", `${className}-pool`) }],
        },
      },
    },
    {
      apiVersion: infraGroupVersion,
      kind: "TerraformClusterTemplate",
      metadata: meta(className),
      spec: { template: { spec: { source: { image: noopImage("cluster") }, identityRef: { name: "${CAPTF_IDENTITY_NAME}" } } } },
    },
    {
      apiVersion: `${kubeadmControlPlaneGroup}/${capiVersion}`,
      kind: "KubeadmControlPlaneTemplate",
      metadata: meta(className),
      spec: { template: { spec: { kubeadmConfigSpec: { format: "cloud-config" } } } },
    },
    {
      apiVersion: infraGroupVersion,
      kind: "TerraformMachineTemplate",
      metadata: meta(`${className}-control-plane`),
      spec: { template: { spec: { source: { image: noopImage("machine") } } } },
    },
    {
      apiVersion: infraGroupVersion,
      kind: "TerraformMachineTemplate",
      metadata: meta(`${className}-worker`),
      spec: { template: { spec: { source: { image: noopImage("machine") } } } },
    },
    {
      apiVersion: infraGroupVersion,
      kind: "TerraformMachinePoolTemplate",
      metadata: meta(`${className}-pool`),
      spec: { template: { spec: { source: { image: noopImage("machinepool") } } } },
    },
    {
      apiVersion: `${kubeadmBootstrapGroup}/${capiVersion}`,
      kind: "KubeadmConfigTemplate",
      metadata: meta(`${className}-worker`),
      spec: { template: { spec: { format: "cloud-config" } } },
    },
  ];
}

/** The `clusterclass` flavor: a Cluster of the ClusterClass (clusterctl adds the class to its output unless the namespace has it). */
function clusterOfClassObjects(): AnyObject[] {
  return [
    {
      apiVersion: capiGroupVersion,
      kind: "Cluster",
      metadata: meta("${CLUSTER_NAME}"),
      spec: {
        clusterNetwork,
        topology: {
          classRef: { name: clusterClassName },
          version: "${KUBERNETES_VERSION}",
          controlPlane: { replicas: "${CONTROL_PLANE_MACHINE_COUNT:=1}" },
          workers: {
            machineDeployments: [{ class: "default-worker", name: "md-0", replicas: "${WORKER_MACHINE_COUNT:=3}" }],
            machinePools: [{ class: "default-pool", name: "mp-0", replicas: "${WORKER_MACHINE_COUNT:=3}" }],
          },
        },
      },
    },
  ];
}

export function flavorFileName(flavor: ClusterctlFlavor): string {
  return flavor === "" ? "cluster-template.yaml" : `cluster-template-${flavor}.yaml`;
}

function flavorObjects(flavor: ClusterctlFlavor, demoDirectory: string): AnyObject[] {
  switch (flavor) {
    case "":
      return noopFlavorObjects(demoDirectory);
    case "gcp-machinepool":
      return [
        ...cloudClusterObjects(),
        ...cloudPoolObjects("gcp-machinepool", { image: "${GCP_NODE_IMAGE}", machine_type: "${GCP_MACHINE_TYPE:=n2-standard-4}" }),
      ];
    case "azure-machinepool":
      return [
        ...cloudClusterObjects(),
        ...cloudPoolObjects("azure-machinepool", { image_id: "${AZURE_NODE_IMAGE_ID}", vm_size: "${AZURE_VM_SIZE:=Standard_D4s_v5}" }),
      ];
    case "clusterclass":
      return clusterOfClassObjects();
  }
}

// Counts are numbers once clusterctl substitutes them: write their variables unquoted.
const numericVariable = /(replicas: )(['"]?)(\$\{[A-Z_]+(?::=\d+)?\})\2/g;

/** Every asset, paths relative to the package root; `demoDirectory` is e2e/manifests/demo. */
export function renderClusterctlFiles(demoDirectory: string): GeneratedFile[] {
  return [
    {
      path: `${clusterctlDirectory}/metadata.yaml`,
      content: header("packages/controller/src/manager-main.ts") + documents([metadataObject()]),
    },
    {
      path: `${clusterctlDirectory}/infrastructure-components.yaml`,
      content: header("packages/controller/src/install") + documents(infrastructureComponentObjects()),
    },
    { path: `${clusterctlDirectory}/monitoring.yaml`, content: header("packages/controller/src/monitoring") + monitoringDocuments() },
    {
      path: `${clusterctlDirectory}/clusterclass-${clusterClassName}.yaml`,
      content: header("packages/controller/src/install/clusterctl.ts") + documents(clusterClassObjects()),
    },
    ...clusterctlFlavors.map((flavor) => ({
      path: `${clusterctlDirectory}/${flavorFileName(flavor)}`,
      content:
        header(flavor === "" ? "e2e/manifests/demo" : "packages/controller/src/install/clusterctl.ts") +
        documents(flavorObjects(flavor, demoDirectory)).replace(numericVariable, "$1$3"),
    })),
  ];
}

/** Assets whose content on disk differs from the rendering, or which are missing. */
export function staleClusterctlFiles(packageRoot: string, demoDirectory: string): string[] {
  return renderClusterctlFiles(demoDirectory)
    .filter((file) => {
      const target = join(packageRoot, file.path);
      return !existsSync(target) || readFileSync(target, "utf8") !== file.content;
    })
    .map((file) => file.path);
}
