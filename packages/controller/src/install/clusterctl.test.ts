import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { parseAllDocuments } from "yaml";
import {
  clusterctlFlavors,
  flavorFileName,
  infrastructureComponentObjects,
  metadataObject,
  renderClusterctlFiles,
  staleClusterctlFiles,
  type ManifestObject,
} from "./clusterctl.js";
import { defaultInstallOptions, installPath, renderInstallFiles } from "./manifests.js";

const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
const demoDirectory = fileURLToPath(new URL("../../../../e2e/manifests/demo", import.meta.url));

describe("the clusterctl assets", () => {
  it("config/clusterctl matches src/install and e2e/manifests/demo (run `pnpm --filter @captf/controller gen` when this fails)", () => {
    expect(staleClusterctlFiles(packageRoot, demoDirectory)).toEqual([]);
  });

  it("declares the release series of the manager's version on contract v1beta2", () => {
    expect(metadataObject()).toEqual({
      apiVersion: "clusterctl.cluster.x-k8s.io/v1alpha3",
      kind: "Metadata",
      releaseSeries: [{ major: 0, minor: 1, contract: "v1beta2" }],
    });
  });

  it("ships install.yaml's objects, each labelled infrastructure-terraform, the CRDs also for clusterctl move", () => {
    const components = infrastructureComponentObjects();
    const install = parseAllDocuments(renderInstallFiles().find((file) => file.path === installPath)!.content).map(
      (document) => document.toJS() as ManifestObject,
    );
    expect(components.map((object) => `${object.kind}/${object.metadata.name}`)).toEqual(
      install.map(
        (object) => `${object.kind}/${object.metadata.name!.replace(defaultInstallOptions.namespace, "${CAPTF_NAMESPACE:=captf-system}")}`,
      ),
    );
    for (const object of components) expect(object.metadata.labels!["cluster.x-k8s.io/provider"]).toBe("infrastructure-terraform");
    for (const crd of components.filter((object) => object.kind === "CustomResourceDefinition"))
      expect(crd.metadata.labels).toHaveProperty(["clusterctl.cluster.x-k8s.io"], "");
  });

  it("names the image, the namespace, the replicas and the shards as variables with the shipped defaults", () => {
    const text = renderClusterctlFiles(demoDirectory).find((file) => file.path.endsWith("infrastructure-components.yaml"))!.content;
    const variables = new Set([...text.matchAll(/\$\{([A-Z0-9_]+)(:=[^}]*)?\}/g)].map((match) => `${match[1]}${match[2] ?? ""}`));
    expect([...variables].sort()).toEqual([
      `CAPTF_IMAGE:=${defaultInstallOptions.image}`,
      "CAPTF_NAMESPACE:=captf-system",
      "CAPTF_REPLICAS:=1",
      "CAPTF_SHARDS:=1",
    ]);
    expect(text).not.toMatch(/captf-system(?![}])/);
  });

  it("writes a template per flavor whose counts stay numbers once substituted, without the demo's variables Secret", () => {
    const files = renderClusterctlFiles(demoDirectory);
    const demo = parseAllDocuments(readFileSync(join(demoDirectory, "10-cluster.yaml"), "utf8")).map(
      (document) => document.toJS() as ManifestObject,
    );
    // The demo's own values stay out of a template users fill with theirs.
    expect(
      demo.filter((object) => object.metadata.labels?.["captf.io/variables"] === "true").map((object) => object.metadata.name),
    ).toEqual(["demo-cluster-variables"]);
    for (const flavor of clusterctlFlavors) {
      const text = files.find((file) => file.path.endsWith(`/${flavorFileName(flavor)}`))!.content;
      const substituted = text.replace(
        /\$\{([A-Z0-9_]+)(?::=([^}]*))?\}/g,
        (_, name: string, fallback?: string) => fallback ?? (name === "KUBERNETES_VERSION" ? "v1.36.3" : "x"),
      );
      const objects = parseAllDocuments(substituted).map((document) => document.toJS() as ManifestObject);
      expect(objects.length).toBeGreaterThan(0);
      expect(objects.filter((object) => object.metadata.labels?.["captf.io/variables"] !== undefined)).toEqual([]);
      for (const object of objects) expect(object.metadata.namespace).toBe("x");
      for (const match of substituted.matchAll(/replicas: (.*)/g)) expect(match[1]).toMatch(/^\d+$/);
    }
  });
});
