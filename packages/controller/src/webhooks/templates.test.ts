import { describe, expect, it } from "@jest/globals";
import { clusterTemplate, machineTemplate, poolTemplate } from "../api/examples.test-support.js";
import type { TerraformClusterTemplate, TerraformMachinePoolTemplate, TerraformMachineTemplate } from "../api/templates.js";
import { asUser, reasonsOf } from "./admission.test-support.js";
import {
  topologyDryRunAnnotation,
  validateTerraformClusterTemplate,
  validateTerraformMachinePoolTemplate,
  validateTerraformMachineTemplate,
} from "./templates.js";
import type { AdmissionContext, Verdict } from "./verdict.js";

type AnyTemplate = TerraformClusterTemplate | TerraformMachineTemplate | TerraformMachinePoolTemplate;
/** The three template validators, each of its own kind: the table calls them alike. */
type TemplateValidator = (oldObject: AnyTemplate | undefined, newObject: AnyTemplate, context: AdmissionContext) => Verdict;

describe("template webhooks", () => {
  it("admit valid templates", () => {
    expect(validateTerraformClusterTemplate(undefined, clusterTemplate(), asUser())).toEqual({ allowed: true });
    expect(validateTerraformMachineTemplate(undefined, machineTemplate(), asUser())).toEqual({ allowed: true });
    expect(validateTerraformMachinePoolTemplate(undefined, poolTemplate(), asUser())).toEqual({ allowed: true });
  });

  it("admit a cluster template without identityRef, with a warning", () => {
    const template = clusterTemplate();
    delete template.spec.template.spec.identityRef;
    expect(validateTerraformClusterTemplate(undefined, template, asUser())).toEqual({
      allowed: true,
      warnings: [
        "spec.template.spec sets no identityRef; TerraformClusters created from this template are rejected unless a " +
          "ClusterClass patch sets one",
      ],
    });
  });

  it.each([
    ["TerraformClusterTemplate", () => clusterTemplate(), validateTerraformClusterTemplate],
    ["TerraformMachineTemplate", () => machineTemplate(), validateTerraformMachineTemplate],
    ["TerraformMachinePoolTemplate", () => poolTemplate(), validateTerraformMachinePoolTemplate],
  ] as const)("%s: spec.template.spec is immutable, metadata is not, and a topology dry-run is exempt", (kind, build, validate) => {
    const before: AnyTemplate = build();
    const relabelled = structuredClone(before);
    relabelled.spec.template.metadata = { labels: { tier: "gold" } };
    expect((validate as TemplateValidator)(before, relabelled, asUser()).allowed).toBe(true);

    const changed = structuredClone(before);
    changed.spec.template.spec.source.image = "ghcr.io/x/other:v2";
    expect(reasonsOf((validate as TemplateValidator)(before, changed, asUser()))).toEqual([
      `${kind} spec.template.spec is immutable; create a new ${kind} and point its users at it (Cluster API then rolls out the change)`,
    ]);
    changed.metadata!.annotations = { [topologyDryRunAnnotation]: "" };
    expect(
      (validate as TemplateValidator)(before, changed, asUser("system:serviceaccount:capi-system:capi-manager", { dryRun: true })).allowed,
    ).toBe(true);
    expect((validate as TemplateValidator)(before, changed, asUser()).allowed).toBe(false);
  });

  it("let a topology dry-run patch a cluster template's endpoint: the template has no endpoint rule of its own", () => {
    const before = clusterTemplate();
    const patched = structuredClone(before);
    patched.spec.template.spec.controlPlaneEndpoint = { host: "patched.example.com", port: 443 };
    const dryRun = asUser("capi", { dryRun: true });
    // The annotation Cluster API's topology controller puts on the objects of its dry-run is what exempts the change.
    expect(
      validateTerraformClusterTemplate(
        before,
        { ...patched, metadata: { ...patched.metadata, annotations: { "topology.cluster.x-k8s.io/dry-run": "" } } },
        dryRun,
      ),
    ).toEqual({ allowed: true });
    expect(validateTerraformClusterTemplate(before, patched, dryRun).allowed).toBe(false);
  });

  it("refuse a providerID in a machine template and in a pool template", () => {
    const machine = machineTemplate();
    machine.spec.template.spec.providerID = "aws:///a/i-1";
    expect(reasonsOf(validateTerraformMachineTemplate(undefined, machine, asUser()))).toEqual([
      expect.stringContaining("spec.template.spec.providerID must be empty"),
    ]);
    const pool = poolTemplate();
    pool.spec.template.spec.providerIDList = ["aws:///a/i-1"];
    expect(reasonsOf(validateTerraformMachinePoolTemplate(undefined, pool, asUser()))).toEqual([
      expect.stringContaining("spec.template.spec.providerIDList must be empty"),
    ]);
  });

  it("apply the kind's spec rules under spec.template.spec, and check the copied metadata", () => {
    const template = machineTemplate();
    template.spec.template.spec.variables = { machine_name: "x" };
    template.spec.template.spec.jobs = { securityContext: { runAsNonRoot: false } };
    template.spec.template.metadata = { labels: { "bad label": "x" } };
    expect(reasonsOf(validateTerraformMachineTemplate(undefined, template, asUser()))).toEqual([
      expect.stringContaining('spec.template.metadata.labels: key "bad label"'),
      expect.stringContaining("spec.template.spec.jobs.securityContext.runAsNonRoot: false is not allowed"),
      expect.stringContaining('spec.template.spec.variables: variable name "machine_name" is reserved'),
    ]);
  });
});
