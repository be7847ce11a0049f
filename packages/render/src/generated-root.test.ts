import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import type { Role, RoleInputs } from "@captf/contract";
import { InputsTooLargeError, maxGeneratedRootBytes, renderBackendRoot, renderGeneratedRoot } from "./generated-root.js";
import { clusterInputs, machineInputs, machinePoolInputs, userVariables } from "./render-fixtures.test-support.js";

// UPDATE_GOLDEN=1 rewrites the files under src/testdata/ from the current renderer.
const update = process.env.UPDATE_GOLDEN === "1";
/** The parts of a rendered main.tf.json these tests read. */
interface MainTf {
  variable: Record<string, unknown>;
  terraform: unknown;
  module: { role: Record<string, unknown> };
  output: Record<string, unknown>;
}

const testdata = fileURLToPath(new URL("./testdata/", import.meta.url));

const cases: [string, Role, () => RoleInputs[Role], boolean][] = [
  ["cluster", "cluster", clusterInputs, false],
  ["cluster-variables", "cluster", clusterInputs, true],
  ["machine", "machine", machineInputs, false],
  ["machine-variables", "machine", machineInputs, true],
  ["machinepool", "machinepool", machinePoolInputs, false],
  ["machinepool-variables", "machinepool", machinePoolInputs, true],
];

describe("renderGeneratedRoot goldens", () => {
  it.each(cases)("%s", (name, role, inputs, withVariables) => {
    const root = renderGeneratedRoot(role, inputs(), withVariables ? userVariables : {});
    for (const file of ["main.tf.json", "terraform.tfvars.json"] as const) {
      const path = `${testdata}${name}/${file}`;
      if (update) {
        mkdirSync(`${testdata}${name}`, { recursive: true });
        writeFileSync(path, root[file]);
      }
      expect(root[file]).toBe(readFileSync(path, "utf8"));
    }
  });
});

describe("renderGeneratedRoot", () => {
  it("declares nullable inputs with a null default and bootstrap data as sensitive", () => {
    const main = JSON.parse(renderGeneratedRoot("machine", machineInputs())["main.tf.json"]) as MainTf;
    expect(main.variable.failure_domain).toEqual({ type: "string", default: null });
    expect(main.variable.bootstrap_data).toEqual({ type: "string", sensitive: true });
    expect(main.variable.captf_cluster).toEqual({ type: "any" });
    expect(main.terraform).toEqual({ backend: { kubernetes: {} } });
    expect(main.module.role.source).toBe("../../module");
    expect(Object.values(main.output)).toEqual(expect.arrayContaining([{ value: "${module.role.health}", sensitive: true }]));
  });

  it("gives the cluster root no captf_cluster_outputs at all", () => {
    const root = renderGeneratedRoot("cluster", clusterInputs());
    expect(root["main.tf.json"]).not.toContain("captf_cluster_outputs");
    expect(root["terraform.tfvars.json"]).not.toContain("captf_cluster_outputs");
  });

  it("declares a Secret-sourced user variable sensitive and others untyped", () => {
    const main = JSON.parse(renderGeneratedRoot("machine", machineInputs(), userVariables)["main.tf.json"]) as MainTf;
    expect(main.variable.db_password).toEqual({ sensitive: true });
    expect(main.variable.disk_gib).toEqual({});
    expect(main.module.role.disk_gib).toBe("${var.disk_gib}");
  });

  it("refuses a root over 1,000,000 bytes with a typed error", () => {
    const inputs = { ...machineInputs(), captf_cluster_outputs: { blob: "x".repeat(maxGeneratedRootBytes) } };
    expect(() => renderGeneratedRoot("machine", inputs)).toThrow(InputsTooLargeError);
    try {
      renderGeneratedRoot("machine", inputs);
    } catch (error) {
      expect((error as InputsTooLargeError).bytes).toBeGreaterThan(maxGeneratedRootBytes);
      expect((error as Error).message).toMatch(/at most 1000000 are allowed/);
      expect((error as Error).message).not.toContain("xxxx");
    }
  });

  it("renders the restore root with the backend only", () => {
    expect(renderBackendRoot()).toEqual({
      "main.tf.json": '{\n  "terraform": {\n    "backend": {\n      "kubernetes": {}\n    }\n  }\n}\n',
      "terraform.tfvars.json": "{}\n",
    });
  });
});
