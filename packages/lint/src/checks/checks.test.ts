import { symlinkSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import type { Role } from "@captf/contract";
import { writeModule } from "../cli.test-support.js";
import type { Finding } from "../findings.js";
import { lintModule } from "../lint-module.js";

async function findings(files: Record<string, string>, role: Role = "machinepool", id?: string): Promise<Finding[]> {
  const result = await lintModule(writeModule(files), role);
  if (!result.ok) throw new Error(`does not parse: ${result.findings[0]!.message}`);
  return id ? result.findings.filter((f) => f.id === id) : result.findings;
}

describe("output/provider-id-list-shape", () => {
  const shape = (value: string): Promise<Finding[]> =>
    findings({ "main.tf": `output "provider_id_list" {\n  value = ${value}\n}\n` }, "machinepool", "output/provider-id-list-shape");

  it.each([
    ["sort(data.x.y.ids)", 0],
    ["(sort(data.x.y.ids))", 0],
    ["tolist(sort(data.x.y.ids))", 0],
    ["concat(sort(data.x.a), sort(data.x.b))", 0],
    ["concat(sort(data.x.a), data.x.b)", 1],
    ["var.x ? sort(data.x.a) : sort(data.x.b)", 0],
    ["var.x ? sort(data.x.a) : data.x.b", 1],
    ["distinct(data.x.y.ids)", 1],
    ["distinct(sort(data.x.y.ids))", 0],
    ["sort(distinct(data.x.y.ids))", 0],
    ["toset(data.x.y.ids)", 1],
  ])("%s gives %d finding(s)", async (value, count) => {
    expect(await shape(value)).toHaveLength(count);
  });

  it.each([
    ['i.state == "running"', 1],
    ['i.state == "RUNNING"', 1],
    ['i.status == "Healthy"', 1],
    ['contains(["pending", "Running"], i.state)', 1],
    ["i.healthy", 1],
    ['i["running"]', 1],
    ["i.unhealthy_threshold > 2", 0],
    ["!i.is_running", 0],
    ['i.tag == "healthy-group"', 0],
    ['i.zone == "a"', 0],
  ])("a for filter on %s gives %d finding(s)", async (condition, count) => {
    expect(await shape(`sort([for i in data.x.y.instances : i.id if ${condition}])`)).toHaveLength(count);
  });

  it("does not read JSON-syntax expressions", async () => {
    expect(
      await findings(
        { "main.tf.json": '{"output": {"provider_id_list": {"value": "${distinct(data.x.ids)}"}}}' },
        "machinepool",
        "output/provider-id-list-shape",
      ),
    ).toEqual([]);
  });
});

describe("pool/autoscaling-ignore-changes", () => {
  const ignoreAll = "  lifecycle {\n    ignore_changes = all\n  }\n";
  it.each([
    [
      "an unrelated resource ignores all",
      `variable "autoscaling" {}\nresource "null_resource" "n" {\n${ignoreAll}}\nresource "aws_autoscaling_group" "g" {\n  ` +
        `min_size = var.autoscaling.min\n}\n`,
      1,
    ],
    [
      "an unrelated resource ignores desired_capacity",
      'variable "autoscaling" {}\nresource "null_resource" "n" {\n  lifecycle {\n    ignore_changes = [desired_capacity]\n  ' +
        '}\n}\nresource "aws_autoscaling_group" "g" {\n  min_size = var.autoscaling.min\n}\n',
      1,
    ],
    [
      "the scaling group ignores all",
      `variable "autoscaling" {}\nresource "aws_autoscaling_group" "g" {\n  min_size = var.autoscaling.min\n${ignoreAll}}\n`,
      0,
    ],
    [
      "the scaling group ignores sku.capacity",
      'variable "autoscaling" {}\nresource "azurerm_vmss" "g" {\n  x = var.autoscaling.max\n  lifecycle {\n    ignore_changes = ' +
        "[sku[0].capacity]\n  }\n}\n",
      0,
    ],
    ["the module does not use autoscaling", 'resource "aws_autoscaling_group" "g" {}\n', 0],
    ["JSON scaling group", "", 0],
  ])("%s", async (_name, tf, count) => {
    const files: Record<string, string> = tf
      ? { "main.tf": tf }
      : {
          "main.tf.json":
            '{"resource": {"aws_autoscaling_group": {"g": {"min_size": "${var.autoscaling.min}", "lifecycle": ' +
            '{"ignore_changes": ["desired_capacity"]}}}}}',
        };
    expect(await findings(files, "machinepool", "pool/autoscaling-ignore-changes")).toHaveLength(count);
  });

  it("checks nested local modules and names their file", async () => {
    const child = (lifecycle: string): string =>
      `variable "autoscaling" {}\nresource "aws_autoscaling_group" "g" {\n  min_size = var.autoscaling.min\n${lifecycle}}\n`;
    const unmanaged = await findings(
      { "main.tf": 'module "c" {\n  source = "./child"\n}\n', "child/main.tf": child("") },
      "machinepool",
      "pool/autoscaling-ignore-changes",
    );
    expect(unmanaged.map((f) => [f.file, f.line])).toEqual([["child/main.tf", 2]]);
    const managed = await findings(
      {
        "main.tf": 'module "c" {\n  source = "./child"\n}\n',
        "child/main.tf": child("  lifecycle {\n    ignore_changes = [desired_capacity]\n  }\n"),
      },
      "machinepool",
      "pool/autoscaling-ignore-changes",
    );
    expect(managed).toEqual([]);
  });
});

describe("module/provider-config", () => {
  it.each([
    ["p.tf", 'provider "aws" {\n  secret_key = "s"\n}\n', 1],
    ["p.tf", 'provider "aws" {\n  assume_role {\n    token = "t"\n  }\n}\n', 1],
    ["p.tf", 'provider "x" {\n  auth = {\n    client_secret = "s"\n  }\n}\n', 1],
    ["p.tf", 'provider "x" {\n  API_KEY = "k"\n}\n', 1],
    ["p.tf", 'provider "x" {\n  private_key = <<-EOT\n    -----BEGIN\n  EOT\n}\n', 0],
    ["p.tf", 'provider "x" {\n  assume_role {\n    token = var.t\n  }\n}\n', 0],
    ["p.tf", 'provider "x" {\n  password = "p-${var.t}"\n}\n', 0],
    ["p.tf", 'provider "x" {\n  password = ""\n}\n', 0],
    ["p.tf", 'provider "x" {\n  token = 5\n}\n', 0],
    ["p.tf", 'provider "x" {\n  region = "eu"\n  uri    = "qemu:///system"\n}\n', 0],
    ["p.tf.json", '{"provider": {"x": {"password": "p"}}}', 1],
    ["p.tf.json", '{"provider": {"x": {"assume_role": {"client_secret": "s", "role": "r"}}}}', 1],
    ["p.tf.json", '{"provider": {"x": [{"assume_role": [{"token": "s"}]}]}}', 1],
    ["p.tf.json", '{"provider": {"x": {"assume_role": {"token": "${var.t}"}}}}', 0],
  ])("%s %j", async (file, body, count) => {
    expect(await findings({ [file]: body }, "machine", "module/provider-config")).toHaveLength(count);
  });

  it("points at the literal", async () => {
    const [f] = await findings(
      { "p.tf": 'provider "aws" {\n  region = "eu"\n  secret_key = "s"\n}\n' },
      "machine",
      "module/provider-config",
    );
    expect([f!.file, f!.line, f!.column]).toEqual(["p.tf", 3, 16]);
  });
});

describe("module/tofu-shadow", () => {
  const base =
    'terraform {\n  required_version = ">= 1.5"\n  required_providers {\n    aws = { source = "hashicorp/aws" }\n  }\n}\n' +
    'variable "v" {\n  validation {\n    condition = var.v != ""\n    error_message = "m"\n  }\n}\n' +
    'provider "aws" {\n  assume_role {\n    role_arn = "a"\n  }\n}\n' +
    "locals {\n  a = 1\n}\n" +
    'data "aws_ami" "x" {\n  owners = ["1"]\n}\n' +
    'resource "null_resource" "r" {\n  triggers = {}\n}\n' +
    'module "child" {\n  source = "example.com/a/b/c"\n}\n';
  it.each([
    ["identical, reformatted", base.replace(/ {2}/g, "    "), []],
    ["extra resource", `${base}resource "null_resource" "extra" {}\n`, ["resource.null_resource.extra"]],
    ["extra data", `${base}data "aws_ami" "y" {}\n`, ["data.aws_ami.y"]],
    ["extra local", `${base}locals {\n  b = 2\n}\n`, ["local.b"]],
    ["changed local", base.replace("a = 1", "a = 2"), ["local.a"]],
    ["extra module", `${base}module "other" {\n  source = "example.com/g/h/i"\n}\n`, ["module.other"]],
    ["changed module", base.replace("example.com/a/b/c", "example.com/d/e/f"), ["module.child"]],
    ["extra provider alias", `${base}provider "aws" {\n  alias = "b"\n}\n`, ["provider.aws."]],
    ["nested provider block", base.replace('role_arn = "a"', 'role_arn = "b"'), ["provider.aws"]],
    ["nested validation block", base.replace('var.v != ""', "true"), ["variable.v"]],
    ["required_version", base.replace(">= 1.5", ">= 2"), ["required_version"]],
    ["required_providers entry", base.replace("hashicorp/aws", "other/aws"), ["required_providers.aws"]],
    ["changed resource", base.replace("triggers = {}", "triggers = {a = 1}"), ["resource.null_resource.r"]],
  ])("%s", async (_name, tofu, wants) => {
    const got = await findings({ "main.tf": base, "main.tofu": tofu }, "machine", "module/tofu-shadow");
    expect(got).toHaveLength(wants.length);
    wants.forEach((want, i) => {
      expect(got[i]!.message).toContain(want);
      expect(got[i]!.message).not.toMatch(/triggers|other\/aws/);
    });
  });

  it("is silent for a module with only .tofu files", async () => {
    expect(await findings({ "main.tofu": base }, "machine", "module/tofu-shadow")).toEqual([]);
  });
});

describe("input checks", () => {
  it("warns when a contract input has no type or an unreadable one", async () => {
    const got = await findings(
      { "v.tf": 'variable "captf_contract" {}\nvariable "captf_tags" {\n  type = map(strin)\n}\n' },
      "cluster",
      "input/type",
    );
    expect(got.map((f) => [f.severity, f.line])).toEqual([
      ["warning", 1],
      ["warning", 2],
    ]);
    expect(got[1]!.message).toContain("cannot check type map(strin)");
  });

  it("reads JSON-syntax variables", async () => {
    const got = await findings(
      { "v.tf.json": '{\n  "variable": {\n    "control_plane_initialized": {"type": "string"},\n    "region": {}\n  }\n}\n' },
      "cluster",
    );
    expect(got.filter((f) => f.id === "input/type").map((f) => [f.file, f.line, f.column])).toEqual([["v.tf.json", 3, 5]]);
    expect(got.filter((f) => f.id === "input/user-variable-default").map((f) => f.message)).toEqual([
      expect.stringContaining("variable region"),
    ]);
  });

  it("rejects user variables named like a module meta-argument", async () => {
    const got = await findings({ "v.tf": 'variable "depends_on" {\n  default = 1\n}\n' }, "machine", "input/reserved");
    expect(got[0]!.message).toContain("meta-argument");
  });

  it("follows captf_tags through two levels of local modules", async () => {
    const files = {
      "main.tf": 'variable "captf_tags" {\n  type = map(string)\n}\nmodule "a" {\n  source = "./a"\n  labels = var.captf_tags\n}\n',
      "a/main.tf": 'variable "labels" {}\nmodule "b" {\n  source = "../b"\n  t = var.labels\n}\n',
      "b/main.tf": 'variable "t" {}\nresource "x" "y" {\n  tags = var.t\n}\n',
    };
    expect(await findings(files, "machine", "input/tags-unused")).toEqual([]);
    expect(await findings({ ...files, "b/main.tf": 'variable "t" {}\n' }, "machine", "input/tags-unused")).toHaveLength(1);
  });
});

describe("loading", () => {
  it("skips a module call that cycles back and still lints the rest", async () => {
    const got = await findings(
      {
        "main.tf": 'module "a" {\n  source = "./a"\n}\n',
        "a/main.tf": 'module "up" {\n  source = "../"\n}\nterraform {\n  backend "s3" {}\n}\n',
      },
      "machine",
      "module/backend",
    );
    expect(got.map((f) => f.file)).toEqual(["a/main.tf"]);
  });

  it("reports a module file symlinked from outside the root", async () => {
    const outside = writeModule({ "shared.tf": 'variable "x" {\n  default = 1\n}\n' });
    const dir = writeModule({ "main.tf": "" });
    symlinkSync(join(outside, "shared.tf"), join(dir, "shared.tf"));
    symlinkSync(join(outside, "gone.tf"), join(dir, "gone.tf"));
    mkdirSync(join(dir, "sub"));
    const result = await lintModule(dir, "machine");
    const escapes = result.findings.filter((f) => f.id === "module/source-escape").map((f) => f.file);
    expect(escapes).toEqual(["gone.tf", "shared.tf"]);
  });

  it.each([
    ["variable {\n  type = string\n}\n", "takes exactly one label", 1],
    ['resource "x" {\n}\n', "takes exactly 2 labels", 1],
    ['variable "a" {\n  type = string\n  type = number\n}\n', "set twice", 3],
    ['variable "a" {}\nvariable "a" {}\n', "declared twice", 2],
    ['output "a" {\n  value = [1, 2\n}\n', 'syntax error: missing "]"', 3],
  ])("a module with %j does not parse", async (text, message, line) => {
    const result = await lintModule(writeModule({ "main.tf": text }), "machine");
    expect(result.ok).toBe(false);
    expect(result.findings).toEqual([
      expect.objectContaining({ id: "module/parse", file: "main.tf", line, message: expect.stringContaining(message) }),
    ]);
  });

  it("reads heredocs, template directives, provider functions and splats", async () => {
    const text = [
      "locals {\n  a = <<-EOT\n    %{ for x in var.captf_tags ~}${x}%{ endfor ~}\n  EOT\n}",
      'locals {\n  b = provider::aws::arn_parse("x").region\n  c = data.x.y[*].id\n  d = [for k, v in var.m : "${k}=${v}"]\n  e ' +
        "= { for k, v in var.m : k => v... if v != null }\n  f = -1 + 2 * 3 >= 4 && !false || null == null\n}",
    ].join("\n");
    const result = await lintModule(writeModule({ "main.tf": text }), "machine");
    expect(result.ok).toBe(true);
    expect(result.findings.some((f) => f.id === "input/tags-unused")).toBe(false);
  });
});
