import { describe, expect, it } from "@jest/globals";
import { minimalMachine } from "../api/examples.test-support.js";
import { identityUsersFrom, machineDeletionFactsFrom } from "./facts.js";

const machineRef = (name: string) => ({ apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name });

describe("machineDeletionFactsFrom", () => {
  const terraformMachine = minimalMachine("md-0-abc");

  it("lists the Machines whose infrastructureRef is this TerraformMachine, deleting or not", () => {
    const machines = [
      { metadata: { name: "m-live" }, spec: { infrastructureRef: machineRef("md-0-abc") } },
      { metadata: { name: "m-going", deletionTimestamp: "2026-01-01T00:00:00Z" }, spec: { infrastructureRef: machineRef("md-0-abc") } },
      {
        metadata: { name: "m-v1beta1" },
        spec: { infrastructureRef: { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformMachine", name: "md-0-abc" } },
      },
      { metadata: { name: "m-other" }, spec: { infrastructureRef: machineRef("md-0-xyz") } },
      {
        metadata: { name: "m-docker" },
        spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "DockerMachine", name: "md-0-abc" } },
      },
      {
        metadata: { name: "m-other-group" },
        spec: { infrastructureRef: { apiGroup: "example.com", kind: "TerraformMachine", name: "md-0-abc" } },
      },
      { metadata: { name: "m-no-ref" }, spec: {} },
    ];
    expect(machineDeletionFactsFrom(terraformMachine, machines, undefined)).toEqual({
      referencingMachines: [
        { name: "m-live", deleting: false },
        { name: "m-going", deleting: true },
        { name: "m-v1beta1", deleting: false },
      ],
      clusterPaused: false,
    });
  });

  it("reads a Cluster as paused by spec.paused or the paused annotation", () => {
    expect(machineDeletionFactsFrom(terraformMachine, [], { spec: { paused: true } }).clusterPaused).toBe(true);
    expect(
      machineDeletionFactsFrom(terraformMachine, [], { metadata: { annotations: { "cluster.x-k8s.io/paused": "" } }, spec: {} })
        .clusterPaused,
    ).toBe(true);
    expect(machineDeletionFactsFrom(terraformMachine, [], { spec: { paused: false } }).clusterPaused).toBe(false);
  });
});

describe("identityUsersFrom", () => {
  it("finds clusters (own or defaults identityRef), machines and pools naming the identity, sorted", () => {
    const listed = {
      TerraformCluster: [
        { metadata: { namespace: "b", name: "own" }, spec: { identityRef: { name: "aws" } } },
        {
          metadata: { namespace: "a", name: "defaults" },
          spec: { identityRef: { name: "other" }, defaults: { identityRef: { name: "aws", kind: "TerraformClusterIdentity" } } },
        },
        { metadata: { namespace: "a", name: "unrelated" }, spec: { identityRef: { name: "other" } } },
      ],
      TerraformMachine: [
        { metadata: { namespace: "a", name: "m" }, spec: { identityRef: { name: "aws" } } },
        { metadata: { namespace: "a", name: "local-secret" }, spec: { identityRef: { name: "aws", kind: "Secret" } } },
        { metadata: { namespace: "a", name: "inherits" }, spec: {} },
      ],
      TerraformMachinePool: [{ metadata: { namespace: "c", name: "p" }, spec: { identityRef: { name: "aws" } } }],
    };
    expect(identityUsersFrom("aws", listed)).toEqual([
      { kind: "TerraformCluster", namespace: "a", name: "defaults" },
      { kind: "TerraformCluster", namespace: "b", name: "own" },
      { kind: "TerraformMachine", namespace: "a", name: "m" },
      { kind: "TerraformMachinePool", namespace: "c", name: "p" },
    ]);
    expect(identityUsersFrom("nobody", listed)).toEqual([]);
  });
});
