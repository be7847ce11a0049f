import { createHash } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { backendConfigValues, stateLockLeaseName, stateSecretLabels, stateSecretName, stateSecretSuffix } from "./backend.js";

describe("the kubernetes backend's names", () => {
  it("derive the suffix from namespace, kind and name", () => {
    const expected = createHash("sha256").update("team-a/TerraformMachine/prod-md-0-abcde").digest("hex").slice(0, 16);
    expect(stateSecretSuffix({ role: "machine", namespace: "team-a", name: "prod-md-0-abcde" })).toBe(`${expected}-m`);
    expect(stateSecretSuffix({ role: "cluster", namespace: "a", name: "b" })).toMatch(/^[0-9a-f]{16}-c$/);
    expect(stateSecretSuffix({ role: "machinepool", namespace: "a", name: "b" })).toMatch(/^[0-9a-f]{16}-mp$/);
    expect(stateSecretName("abc-m")).toBe("tfstate-default-abc-m");
    expect(stateLockLeaseName("abc-m")).toBe("lock-tfstate-default-abc-m");
  });

  it("render init's -backend-config values with the labels as an HCL map", () => {
    const values = backendConfigValues({ role: "cluster", namespace: "team-a", name: "prod", clusterName: "prod" });
    expect(values).toEqual([
      `secret_suffix=${stateSecretSuffix({ role: "cluster", namespace: "team-a", name: "prod" })}`,
      "namespace=team-a",
      "in_cluster_config=true",
      'labels={"captf.infrastructure.cluster.x-k8s.io/owner-kind"="TerraformCluster",' +
        '"captf.infrastructure.cluster.x-k8s.io/owner-name"="prod","captf.io/managed"="true",' +
        '"cluster.x-k8s.io/cluster-name"="prod","clusterctl.cluster.x-k8s.io/move"=""}',
    ]);
    expect(backendConfigValues({ role: "machine", namespace: "n", name: "m", clusterName: "c" }, ["config_path=/k"])[2]).toBe(
      "config_path=/k",
    );
  });

  it("label names over 63 characters with the first 16 hex digits of their SHA-256, as the reference's state carries them", () => {
    const name = "m".repeat(253);
    const clusterName = "c".repeat(64);
    const sha16 = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);
    expect(stateSecretLabels({ role: "machine", namespace: "n", name, clusterName })).toEqual({
      "captf.infrastructure.cluster.x-k8s.io/owner-kind": "TerraformMachine",
      "captf.infrastructure.cluster.x-k8s.io/owner-name": sha16(name),
      "captf.io/managed": "true",
      "cluster.x-k8s.io/cluster-name": sha16(clusterName),
      "clusterctl.cluster.x-k8s.io/move": "",
    });
    expect(backendConfigValues({ role: "machine", namespace: "n", name, clusterName }).at(-1)).toContain(
      `"captf.infrastructure.cluster.x-k8s.io/owner-name"="${sha16(name)}"`,
    );
  });
});
