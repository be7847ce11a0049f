import { describe, expect, it } from "@jest/globals";
import type { Role } from "@captf/contract";
import { stateEncryptionProblems, variablesFromProblems, variablesProblems, workspaceProblems, type WorkspaceSpec } from "./workspace.js";

describe("variablesProblems", () => {
  it.each<[Role, string, string]>([
    ["cluster", "captf_cluster", "the captf_ prefix belongs to inputs captf injects"],
    ["cluster", "control_plane_endpoint", "it is a cluster contract input"],
    ["machine", "machine_name", "it is a machine contract input"],
    ["machine", "bootstrap_data", "it is a machine contract input"],
    ["machinepool", "replicas", "it is a machinepool contract input"],
    ["machinepool", "for_each", "it is a module meta-argument"],
    ["machine", "1st", "is not a valid Terraform identifier"],
  ])("refuses the %s variable %s: %s", (role, name, reason) => {
    expect(variablesProblems(role, "spec.variables", { [name]: "secret-value" })).toEqual([expect.stringContaining(reason)]);
    expect(variablesProblems(role, "spec.variables", { [name]: "secret-value" })[0]).not.toContain("secret-value");
  });

  it("reserves names per role: a cluster may set machine_name, a machine may not", () => {
    expect(variablesProblems("cluster", "spec.variables", { machine_name: "x" })).toEqual([]);
    expect(variablesProblems("machine", "spec.variables", { machine_name: "x" })).toHaveLength(1);
  });

  it("refuses a non-object and more than 256 keys", () => {
    expect(variablesProblems("cluster", "spec.variables", ["a"])).toEqual([
      "spec.variables must be a JSON object of variable names to values",
    ]);
    const many = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`v${i}`, i]));
    expect(variablesProblems("cluster", "spec.variables", many)).toEqual([
      expect.stringContaining("spec.variables sets 257 variables; at most 256 are allowed"),
    ]);
  });
});

describe("variablesFromProblems", () => {
  it("accepts 16 well-formed sources", () => {
    expect(
      variablesFromProblems(
        "spec.variablesFrom",
        Array.from({ length: 16 }, (_, i) => ({ configMapRef: { name: `s${i}` } })),
      ),
    ).toEqual([]);
  });

  it.each<[string, WorkspaceSpec["variablesFrom"], string]>([
    [
      "17 sources",
      Array.from({ length: 17 }, (_, i) => ({ secretRef: { name: `s${i}` } })),
      "spec.variablesFrom lists 17 sources; at most 16 are allowed",
    ],
    [
      "an entry naming both",
      [{ configMapRef: { name: "a" }, secretRef: { name: "b" } }],
      "spec.variablesFrom[0] must set exactly one of configMapRef and secretRef (it sets both)",
    ],
    [
      "an entry naming neither",
      [{ optional: true }],
      "spec.variablesFrom[0] must set exactly one of configMapRef and secretRef (it sets neither)",
    ],
    [
      "an invalid name",
      [{ configMapRef: { name: "Not_Valid" } }],
      'spec.variablesFrom[0]: "Not_Valid" is not a valid ConfigMap or Secret name',
    ],
  ])("refuses %s", (_name, sources, problem) => {
    expect(variablesFromProblems("spec.variablesFrom", sources)).toEqual([expect.stringContaining(problem)]);
  });
});

describe("workspaceProblems", () => {
  const valid: WorkspaceSpec = {
    source: { image: "ghcr.io/x/module:v1" },
    jobs: { activeDeadlineSeconds: 600 },
    variables: { region: "eu" },
  };

  it("refuses a missing or malformed image", () => {
    expect(
      workspaceProblems({ role: "cluster", path: "spec", oldSpec: undefined, newSpec: { source: { image: "" } }, deleting: false }),
    ).toEqual(["spec.source.image is required: name the module image (registry/repository:tag or @sha256:<digest>)"]);
    expect(
      workspaceProblems({
        role: "cluster",
        path: "spec.template.spec",
        oldSpec: undefined,
        newSpec: { source: { image: "ghcr.io/X:v1" } },
        deleting: false,
      }),
    ).toEqual([
      expect.stringContaining(
        'spec.template.spec.source.image: "ghcr.io/X:v1" is not a valid image reference: the repository name must be lowercase',
      ),
    ]);
  });

  it("checks a field on update only when it changed, so an object stored before a rule still updates", () => {
    const stored: WorkspaceSpec = {
      source: { image: "ghcr.io/X:v1" },
      jobs: { lockTimeoutSeconds: 4000 },
      variables: { captf_old: 1 },
      variablesFrom: [{}],
    };
    const relabelled = structuredClone(stored);
    expect(workspaceProblems({ role: "machine", path: "spec", oldSpec: stored, newSpec: relabelled, deleting: false })).toEqual([]);
    relabelled.jobs = { lockTimeoutSeconds: 5000 };
    expect(workspaceProblems({ role: "machine", path: "spec", oldSpec: stored, newSpec: relabelled, deleting: false })).toEqual([
      expect.stringContaining("spec.jobs.lockTimeoutSeconds: 5000"),
    ]);
  });

  it("skips the jobs policy of an object being deleted, so its finalizer stays removable", () => {
    const newSpec = { ...valid, jobs: { lockTimeoutSeconds: 4000 } };
    expect(workspaceProblems({ role: "machinepool", path: "spec", oldSpec: valid, newSpec, deleting: true })).toEqual([]);
    expect(workspaceProblems({ role: "machinepool", path: "spec", oldSpec: valid, newSpec, deleting: false })).toHaveLength(1);
  });

  it("compares variables by value: reordered keys are no change", () => {
    const oldSpec: WorkspaceSpec = { ...valid, variables: { captf_x: 1, a: { b: 2, c: 3 } } };
    const newSpec: WorkspaceSpec = { ...valid, variables: { a: { c: 3, b: 2 }, captf_x: 1 } };
    expect(workspaceProblems({ role: "cluster", path: "spec", oldSpec, newSpec, deleting: false })).toEqual([]);
  });
});

describe("stateEncryptionProblems", () => {
  it("accepts a Secret name with or without a key", () => {
    expect(stateEncryptionProblems("spec.stateEncryption", { secretRef: { name: "tofu-keys" } })).toEqual([]);
    expect(stateEncryptionProblems("spec.stateEncryption", { secretRef: { name: "tofu-keys", key: "cluster.json" } })).toEqual([]);
  });

  it.each<[string, unknown, string]>([
    ["no secretRef", {}, "spec.stateEncryption.secretRef is required: name the Secret holding TF_ENCRYPTION"],
    [
      "a name that is no Secret name",
      { secretRef: { name: "Tofu_Keys" } },
      'spec.stateEncryption.secretRef.name: "Tofu_Keys" is not a valid',
    ],
    ["a key that is no Secret key", { secretRef: { name: "k", key: "a/b" } }, 'spec.stateEncryption.secretRef.key: "a/b" is not a valid'],
  ])("refuses %s", (_name, encryption, problem) => {
    expect(stateEncryptionProblems("spec.stateEncryption", encryption as WorkspaceSpec["stateEncryption"])).toEqual([
      expect.stringContaining(problem),
    ]);
  });

  it("is checked on create and when it changes", () => {
    const spec: WorkspaceSpec = { source: { image: "ghcr.io/x/module:v1" }, stateEncryption: { secretRef: { name: "Bad" } } };
    expect(workspaceProblems({ role: "machine", path: "spec", oldSpec: undefined, newSpec: spec, deleting: false })).toHaveLength(1);
    expect(workspaceProblems({ role: "machine", path: "spec", oldSpec: spec, newSpec: structuredClone(spec), deleting: false })).toEqual(
      [],
    );
  });
});
