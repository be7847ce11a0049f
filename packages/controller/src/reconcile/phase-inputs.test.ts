// The inputs phase: the adapter's observed inputs rendered with the user's variables (hash and root), a pending owner or a missing
// variables source as the wait DependenciesReady reports, and a pinned machine's hash taken from what it applied.
import { describe, expect, it } from "@jest/globals";
import { clusterAdapter } from "../kinds/adapters.js";
import { clusterInputs } from "../kinds/render-inputs.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import type { DurableInputs } from "./durable-inputs.js";
import { passNamespace } from "./phase-pass.test-support.js";
import { reconcileInputs } from "./phase-inputs.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const inputs = clusterInputs({ metadata: { name: "c", namespace: passNamespace } }, { metadata: { name: "m", namespace: passNamespace } });

describe("reconcileInputs", () => {
  it("renders the observed inputs: the root a Job runs and its hash, on the pass and the status scope", async () => {
    const pass = reconcilePass(new FakeObjects().client, {
      now,
      adapter: clusterAdapter,
      facts: { observedInputs: { clusterName: "c", inputs: { pending: false, inputs } } },
    });
    expect(await reconcileInputs(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.inputs.kind).toBe("ready");
    const rendered = pass.facts.inputs.kind === "ready" ? pass.facts.inputs.rendered : undefined;
    expect(Object.keys(rendered!.root).sort()).toEqual(["main.tf.json", "terraform.tfvars.json"]);
    expect(pass.facts.currentHash).toBe(rendered!.hash);
    expect(pass.scope.currentHash).toBe(rendered!.hash);
    expect(pass.facts.renderHeld).toBeDefined();
  });

  it.each([
    ["a missing owner needs someone to fix the objects", "WaitingForOwner", "Unknown"],
    ["a mismatched owner needs someone to fix the objects", "OwnerMismatch", "False"],
  ] as const)("%s: DependenciesReady %s", async (_what, reason, status) => {
    const pass = reconcilePass(new FakeObjects().client, {
      now,
      adapter: clusterAdapter,
      facts: { observedInputs: { clusterName: "c", inputs: { pending: true, reason, message: "m" } } },
    });
    await reconcileInputs(pass);
    expect(pass.facts.inputs).toEqual({ kind: "pending", reason, message: "m", condition: "DependenciesReady", status });
    expect(pass.facts.currentHash).toBeUndefined();
  });

  it("a variables source that does not exist holds the inputs (DependenciesReady False VariablesSourceNotFound)", async () => {
    const pass = reconcilePass(new FakeObjects().client, {
      now,
      adapter: clusterAdapter,
      object: { spec: { source: { image: "registry.example/c:v1" }, variablesFrom: [{ secretRef: { name: "gone" } }] } },
      facts: { observedInputs: { clusterName: "c", inputs: { pending: false, inputs } } },
    });
    await reconcileInputs(pass);
    expect(pass.facts.inputs).toMatchObject({ kind: "pending", reason: "VariablesSourceNotFound", status: "False" });
  });

  it("a pinned machine renders nothing: the hash is the one its durable inputs applied", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now, scope: { pinned: true } });
    pass.durable = { inputsHash: "h2:applied" } as DurableInputs;
    await reconcileInputs(pass);
    expect(pass.facts.inputs).toEqual({ kind: "none" });
    expect(pass.facts.currentHash).toBeUndefined();
    expect(pass.scope.currentHash).toBe("h2:applied");
  });
});
