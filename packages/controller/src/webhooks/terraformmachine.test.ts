import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { fullMachine, minimalMachine } from "../api/examples.test-support.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import { asManager, asUser, managerUsername, reasonsOf } from "./admission.test-support.js";
import { validateTerraformMachine, validateTerraformMachineDeletion } from "./terraformmachine.js";

function updated(change: (machine: TerraformMachine) => void, from = fullMachine()): [TerraformMachine, TerraformMachine] {
  const next = structuredClone(from);
  change(next);
  return [from, next];
}

describe("validateTerraformMachine", () => {
  it("admits a minimal and a full machine, and any providerID on create (clusterctl move recreates machines)", () => {
    expect(validateTerraformMachine(undefined, minimalMachine(), asUser())).toEqual({ allowed: true });
    const moved = fullMachine();
    moved.spec.providerID = "aws:///eu-west-1a/i-1";
    expect(validateTerraformMachine(undefined, moved, asUser())).toEqual({ allowed: true });
  });

  it.each<[string, (machine: TerraformMachine) => void, string]>([
    [
      "source",
      (m) => (m.spec.source.imagePullPolicy = "Always"),
      "spec.source is immutable: a TerraformMachine is replaced, never changed",
    ],
    ["identityRef", (m) => (m.spec.identityRef = { name: "other" }), "spec.identityRef is immutable"],
    ["identityRef removed", (m) => delete m.spec.identityRef, "spec.identityRef is immutable"],
    ["variables", (m) => (m.spec.variables = { instance_type: "m6i.2xlarge", disk_gb: 100 }), "spec.variables is immutable"],
    ["variablesFrom", (m) => m.spec.variablesFrom!.push({ secretRef: { name: "more" } }), "spec.variablesFrom is immutable"],
  ])("refuses a change of %s", (_name, change, reason) => {
    const [before, after] = updated(change);
    expect(reasonsOf(validateTerraformMachine(before, after, asUser()))).toEqual([expect.stringContaining(reason)]);
  });

  it("admits variables with reordered keys, changed jobs, drift, remediation and metadata", () => {
    const [before, after] = updated((m) => {
      m.spec.variables = { disk_gb: 100, instance_type: "m6i.xlarge" };
      m.spec.jobs = { activeDeadlineSeconds: 900 };
      m.spec.drift = { intervalSeconds: 600 };
      m.spec.remediation = { annotateMachine: false };
      m.metadata!.labels = { synced: "by-kcp" };
      m.metadata!.annotations = { [annotations.deleteForMove]: "" };
    });
    expect(validateTerraformMachine(before, after, asUser())).toEqual({ allowed: true });
  });

  it("lets only the manager set an empty providerID", () => {
    const [before, after] = updated((m) => (m.spec.providerID = "aws:///eu-west-1a/i-1"));
    expect(validateTerraformMachine(before, after, asManager())).toEqual({ allowed: true });
    expect(reasonsOf(validateTerraformMachine(before, after, asUser("bob")))).toEqual([
      `spec.providerID may only be set by the captf manager (${managerUsername}), from the module's provider_id output; leave it empty`,
    ]);
  });

  it("refuses changing or clearing a providerID, even by the manager", () => {
    const provisioned = fullMachine();
    provisioned.spec.providerID = "aws:///eu-west-1a/i-1";
    for (const change of [
      (m: TerraformMachine) => (m.spec.providerID = "aws:///eu-west-1a/i-2"),
      (m: TerraformMachine) => delete m.spec.providerID,
    ]) {
      const [before, after] = updated(change, provisioned);
      expect(reasonsOf(validateTerraformMachine(before, after, asManager()))).toEqual([
        expect.stringContaining("spec.providerID is set once and then immutable (aws:///eu-west-1a/i-1)"),
      ]);
    }
  });

  it("refuses a contract input of the machine role as a variable, naming the key and never its value", () => {
    const machine = minimalMachine();
    machine.spec.variables = { bootstrap_data: "c2VjcmV0" };
    const reasons = reasonsOf(validateTerraformMachine(undefined, machine, asUser()));
    expect(reasons).toEqual([expect.stringContaining('"bootstrap_data" is reserved: it is a machine contract input')]);
    expect(reasons[0]).not.toContain("c2VjcmV0");
  });
});

describe("validateTerraformMachineDeletion", () => {
  const machine = fullMachine("demo-md-0-abc");

  it("admits deleting a machine nothing references, or whose Machine is being deleted", () => {
    expect(validateTerraformMachineDeletion(machine, { referencingMachines: [], clusterPaused: false }).allowed).toBe(true);
    expect(
      validateTerraformMachineDeletion(machine, { referencingMachines: [{ name: "demo-md-0-abc", deleting: true }], clusterPaused: false })
        .allowed,
    ).toBe(true);
  });

  it("refuses deleting it under a live Machine, naming the Machine and the fix", () => {
    expect(
      reasonsOf(
        validateTerraformMachineDeletion(machine, {
          referencingMachines: [{ name: "demo-md-0-abc", deleting: false }],
          clusterPaused: true,
        }),
      ),
    ).toEqual([
      "TerraformMachine demo-md-0-abc is the infrastructure of Machine demo-md-0-abc, which is not being deleted; delete the " +
        "Machine instead and Cluster API deletes this object",
    ]);
  });

  it("admits clusterctl move: the delete-for-move annotation on a paused cluster, but not either alone", () => {
    const annotated = (metadataAnnotations: Record<string, string>) => ({
      ...machine,
      metadata: { ...machine.metadata, annotations: metadataAnnotations },
    });
    const live = [{ name: "m", deleting: false }];
    // The annotation clusterctl move sets on the objects it deletes from the source cluster.
    expect(
      validateTerraformMachineDeletion(annotated({ "clusterctl.cluster.x-k8s.io/delete-for-move": "" }), {
        referencingMachines: live,
        clusterPaused: true,
      }).allowed,
    ).toBe(true);
    expect(
      validateTerraformMachineDeletion(annotated({ "clusterctl.cluster.x-k8s.io/delete-for-move": "" }), {
        referencingMachines: live,
        clusterPaused: false,
      }).allowed,
    ).toBe(false);
    expect(validateTerraformMachineDeletion(machine, { referencingMachines: live, clusterPaused: true }).allowed).toBe(false);
  });
});
