import { describe, expect, it } from "@jest/globals";
import { fullPool, minimalPool } from "../api/examples.test-support.js";
import { asUser, reasonsOf } from "./admission.test-support.js";
import { validateTerraformMachinePool } from "./terraformmachinepool.js";

describe("validateTerraformMachinePool", () => {
  it("admits a minimal and a full pool", () => {
    expect(validateTerraformMachinePool(undefined, minimalPool(), asUser())).toEqual({ allowed: true });
    expect(validateTerraformMachinePool(undefined, fullPool(), asUser())).toEqual({ allowed: true });
  });

  it("lets every spec field change", () => {
    const before = fullPool();
    const after = structuredClone(before);
    after.spec.source.image = "ghcr.io/captf-io/module-images/noop-machinepool:v0.2.0";
    after.spec.identityRef = { name: "aws" };
    after.spec.variables = { instance_type: "m6i.xlarge" };
    after.spec.variablesFrom = [{ configMapRef: { name: "other" } }];
    after.spec.providerIDList = ["aws:///a/i-3"];
    expect(validateTerraformMachinePool(before, after, asUser())).toEqual({ allowed: true });
  });

  it.each([
    [
      "a machinepool contract input as a variable",
      { variables: { node_labels: {} } },
      'spec.variables: variable name "node_labels" is reserved: it is a machinepool contract input',
    ],
    [
      "17 variable sources",
      { variablesFrom: Array.from({ length: 17 }, (_, i) => ({ configMapRef: { name: `c${i}` } })) },
      "spec.variablesFrom lists 17 sources",
    ],
    [
      "a deadline at the built-in lock timeout",
      { jobs: { activeDeadlineSeconds: 120 } },
      "spec.jobs.activeDeadlineSeconds: 120 must exceed the built-in lock timeout of 300 seconds",
    ],
    ["a missing image", { source: { image: "" } }, "spec.source.image is required"],
  ])("refuses %s", (_name, fields, reason) => {
    const pool = minimalPool();
    Object.assign(pool.spec, fields);
    expect(reasonsOf(validateTerraformMachinePool(undefined, pool, asUser()))).toEqual([expect.stringContaining(reason)]);
  });
});
