import { readdirSync, readFileSync, existsSync, writeFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { checkIds } from "./checks/ids.js";
import { moduleChecks } from "./checks/registry.js";
import { fastModuleArgs } from "./commands/fast-path.js";
import { packageDir, run, testdataDir, writeModule } from "./cli.test-support.js";

interface FixtureMeta {
  role: string;
  exit: number;
  note?: string;
}

function fixtureDirs(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (!statSync(path).isDirectory()) continue;
    if (existsSync(join(path, "fixture.json"))) out.push(path);
    else out.push(...fixtureDirs(path));
  }
  return out.sort();
}

const fixtures = fixtureDirs(testdataDir).map((dir) => ({
  dir,
  name: relative(testdataDir, dir),
  meta: JSON.parse(readFileSync(join(dir, "fixture.json"), "utf8")) as FixtureMeta,
}));

describe("fixtures: module --strict --format json against expected.json", () => {
  it.each(fixtures.map((f) => [f.name, f] as const))("%s", async (_name, fixture) => {
    const rel = relative(packageDir, fixture.dir);
    const result = await run(["module", rel, "--role", fixture.meta.role, "--strict", "--format", "json"]);
    const golden = join(fixture.dir, "expected.json");
    if (process.env.UPDATE_GOLDEN === "1" || !existsSync(golden)) writeFileSync(golden, result.stdout);
    expect(result.stdout).toBe(readFileSync(golden, "utf8"));
    expect(result.code).toBe(fixture.meta.exit);
    expect(result.stderr).toBe("");
    // A checks/<id>/triggers fixture reports its check; checks/<id>/passes does not.
    const match = /^checks\/([^/]+)\/(triggers|passes)/.exec(fixture.name);
    if (match) {
      const id = Object.values(checkIds).find((c) => c.replace("/", "-") === match[1]);
      expect(id).toBeDefined();
      const ids = (JSON.parse(result.stdout) as { findings: { id: string }[] }).findings.map((f) => f.id);
      if (match[2] === "triggers") expect(ids).toContain(id);
      else expect(ids).not.toContain(id);
    }
  });

  it("covers every module check with a triggering and a passing fixture", () => {
    for (const check of moduleChecks) {
      const slug = check.id.replace("/", "-");
      expect(existsSync(join(testdataDir, "checks", slug, "triggers", "fixture.json"))).toBe(true);
      expect(existsSync(join(testdataDir, "checks", slug, "passes", "fixture.json"))).toBe(true);
    }
  });
});

describe("module command", () => {
  const tagsUnused = "testdata/checks/input-tags-unused/triggers";

  it("prints text grouped by file, without colour off a terminal", async () => {
    const result = await run(["module", "testdata/reference/bad/wrong-type", "--role", "cluster"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^variables\.tf\n {2}\d+:1 +error +input\/type {2}variable control_plane_initialized is declared as string/,
    );
    expect(result.stdout).toContain("fix: declare type = bool");
    expect(result.stdout).toMatch(/1 error\(s\), 0 warning\(s\), 0 info \(read terraform files\)\n$/);
    expect(result.stdout).not.toContain("\u001b[");
  });

  it("colours on a terminal unless NO_COLOR is set", async () => {
    expect((await run(["module", tagsUnused, "--role", "cluster"], { tty: true })).stdout).toContain("\u001b[33mwarning");
    expect((await run(["module", tagsUnused, "--role", "cluster"], { tty: true, env: { NO_COLOR: "1" } })).stdout).not.toContain("\u001b[");
  });

  it("fails on warnings only with --strict", async () => {
    expect((await run(["module", tagsUnused, "--role", "cluster"])).code).toBe(0);
    expect((await run(["module", tagsUnused, "--role", "cluster", "--strict"])).code).toBe(1);
  });

  it("--allow-warning turns a warning into info, never an error", async () => {
    const allowed = await run(["module", tagsUnused, "--role", "cluster", "--strict", "--json", "--allow-warning", "input/tags-unused"]);
    expect(allowed.code).toBe(0);
    const finding = (JSON.parse(allowed.stdout) as { findings: { severity: string; message: string }[] }).findings[0]!;
    expect(finding.severity).toBe("info");
    expect(finding.message).toMatch(/\(allowed by --allow-warning\)$/);
    const error = await run([
      "module",
      "testdata/reference/bad/wrong-type",
      "--role",
      "cluster",
      "--allow-warning=input/type,input/default",
    ]);
    expect(error.code).toBe(1);
  });

  it("writes SARIF 2.1.0 with the rule catalog and a location per result", async () => {
    const result = await run(["module", "testdata/checks/module-backend/triggers", "--role", "machine", "--format", "sarif"]);
    expect(result.code).toBe(1);
    const sarif = JSON.parse(result.stdout) as {
      version: string;
      runs: {
        tool: { driver: { rules: { id: string }[] } };
        results: {
          ruleId: string;
          ruleIndex: number;
          level: string;
          locations: { physicalLocation: { artifactLocation: { uri: string }; region: { startLine: number } } }[];
        }[];
      }[];
    };
    expect(sarif.version).toBe("2.1.0");
    const [run0] = sarif.runs;
    expect(
      run0!.results.map((r) => [
        r.ruleId,
        r.level,
        r.locations[0]!.physicalLocation.artifactLocation.uri,
        r.locations[0]!.physicalLocation.region.startLine,
      ]),
    ).toEqual([
      ["module/backend", "error", "backend.tf", 2],
      ["module/backend", "error", "modules/state/backend.tf", 2],
    ]);
    expect(run0!.tool.driver.rules[run0!.results[0]!.ruleIndex]!.id).toBe("module/backend");
  });

  it("reports a module that does not parse with the parser's position and exits 2", async () => {
    const result = await run(["module", "testdata/checks/module-parse/triggers", "--role", "machine"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/main\.tf\n {2}\d+:\d+ +error +module\/parse {2}syntax error/);
    expect(result.stderr).toBe("");
  });

  it("exits 2 for a directory that does not exist", async () => {
    const result = await run(["module", "testdata/no-such-module", "--role", "machine", "--json"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain("does not exist");
  });
});

describe("usage errors exit 3", () => {
  it.each([
    [["module", "testdata/reference/good/machine"], "Missing required argument: role"],
    [["module", "testdata/reference/good/machine", "--role", "worker"], "Invalid values"],
    [["module", "testdata/reference/good/machine", "--role", "machine", "--contract", "v1alpha2"], "Invalid values"],
    [["module", "a", "b", "--role", "machine"], "Unknown argument"],
    [["module", "a", "--role", "machine", "--colour"], "Unknown argument"],
    [["lint"], "Unknown argument"],
    [[], "name a command"],
    [["image", "x", "--role", "machine", "--platform", "linux/arm64", "--all-platforms"], "exclude each other"],
  ])("%j", async (argv, message) => {
    const result = await run(argv);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain("--help");
  });
});

describe("help", () => {
  it.each([["module"], ["image"], ["validate"], ["schema"], ["version"]])("%s --help reads like a manual page", async (command) => {
    const result = await run([command, "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`tfcapi-lint ${command}`);
    expect(result.stdout).toContain("--help");
  });

  it("module --help documents exit codes and suppressions", async () => {
    const stdout = (await run(["module", "--help"])).stdout.replace(/\s+/g, " ");
    expect(stdout).toContain("tfcapi-lint:ignore <check-id> <reason>");
    expect(stdout).toContain("3: a usage error");
    expect(stdout).toContain("--allow-warning");
  });
});

describe("version", () => {
  it("lists the supported contracts", async () => {
    expect((await run(["version"])).stdout).toMatch(/^tfcapi-lint \d+\.\d+\.\d+ \(contracts: v1alpha1\)\n$/);
    const json = await run(["version", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({ version: expect.any(String), contract: ["v1alpha1"] });
  });
});

describe("validate", () => {
  const valid = {
    provider_id: "noop:///ns/m",
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
    failure_domain: null,
    interruptible: false,
    health: { state: "running", healthy: true },
  };

  it("accepts a valid document and rejects an invalid one, naming the path", async () => {
    const dir = writeModule({
      "ok.json": JSON.stringify(valid),
      "bad.json": JSON.stringify({ ...valid, health: { state: "ok", healthy: true } }),
      "broken.json": "{",
    });
    expect((await run(["validate", join(dir, "ok.json"), "--role", "machine", "--document", "outputs"])).code).toBe(0);
    const bad = await run(["validate", join(dir, "bad.json"), "--role", "machine", "--document", "outputs"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("/health/state");
    const json = await run(["validate", join(dir, "bad.json"), "--role", "machine", "--document", "outputs", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ valid: false, errors: [expect.objectContaining({ path: "/health/state" })] });
    expect((await run(["validate", join(dir, "broken.json"), "--role", "machine", "--document", "outputs"])).code).toBe(2);
    expect((await run(["validate", join(dir, "missing.json"), "--role", "machine", "--document", "outputs"])).code).toBe(2);
    expect((await run(["validate", join(dir, "ok.json"), "--role", "machine", "--document", "state"])).code).toBe(3);
  });
});

describe("schema", () => {
  it("prints the user variables' schema on one line", async () => {
    const dir = writeModule({
      "variables.tf": [
        'variable "captf_tags" {\n  type = map(string)\n}',
        'variable "machine_name" {\n  type = string\n}',
        'variable "region" {\n  type = string\n}',
        'variable "disk" {\n  type = object({ size = number, kind = optional(string, "ssd") })\n  default = {}\n}',
        'variable "zones" {\n  type    = list(string)\n  default = []\n}',
        'variable "extra" {\n  default = null\n}',
        'variable "pair" {\n  type    = tuple([string, number])\n  default = ["a", 1]\n}',
        'variable "labels" {\n  type    = map(string)\n  default = {}\n}',
      ].join("\n\n"),
    });
    const result = await run(["schema", dir, "--role", "machine"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      '{"type":"object","properties":{"disk":{"type":"object","properties":{"kind":{"type":"string"},"size":{"type":"number"}},' +
        '"required":["size"]},"extra":{},"labels":{"type":"object","additionalProperties":{"type":"string"}},' +
        '"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}]},' +
        '"region":{"type":"string"},"zones":{"type":"array","items":{"type":"string"}}},' +
        '"required":["region"],"additionalProperties":false}\n',
    );
  });

  it("exits 2 for a module that does not parse, 1 for a schema over the label limit", async () => {
    expect((await run(["schema", "testdata/checks/module-parse/triggers", "--role", "machine"])).code).toBe(2);
    const many = Array.from(
      { length: 400 },
      (_, i) => `variable "v${i}_${"x".repeat(60)}" {\n  type = object({ a = string, b = number })\n}`,
    ).join("\n");
    const big = await run(["schema", writeModule({ "v.tf": many }), "--role", "machine"]);
    expect(big.code).toBe(1);
    expect(big.stderr).toContain("label limit");
  });
});

describe("the fast path agrees with yargs", () => {
  it.each([
    [["module", "d", "--role", "machine"], { dir: "d", role: "machine", strict: false, format: "text", allowWarning: [] }],
    [
      ["module", "--role=cluster", "d", "--strict", "--json"],
      { dir: "d", role: "cluster", strict: true, format: "json", allowWarning: [] },
    ],
    [
      ["module", "d", "--role", "machinepool", "--format", "sarif", "--allow-warning", "a,b", "--allow-warning=c"],
      { dir: "d", role: "machinepool", format: "sarif", allowWarning: ["a", "b", "c"] },
    ],
  ])("%j", (argv, expected) => {
    expect(fastModuleArgs(argv)).toMatchObject(expected);
  });

  it.each([
    [["module", "d"]],
    [["module", "d", "--role", "x"]],
    [["module", "d", "--role", "machine", "--help"]],
    [["module", "d", "--role", "machine", "--strict=yes"]],
    [["module", "--role", "machine"]],
    [["image", "x", "--role", "machine"]],
  ])("leaves %j to yargs", (argv) => {
    expect(fastModuleArgs(argv)).toBeUndefined();
  });
});
