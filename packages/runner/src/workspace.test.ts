import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  assembleRestoreState,
  checkImageLayout,
  countManagedAddresses,
  ImageLayoutError,
  prepareWorkspace,
  stepEnvironment,
} from "./workspace.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runner-workspace-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("stepEnvironment", () => {
  it("drops HOME and the runner-owned TF_*/KUBE_* names, keeps the Job's own, forces the work paths", () => {
    const { env, dropped } = stepEnvironment(
      {
        HOME: "/root",
        PATH: "/usr/bin",
        TF_VAR_name: "override",
        TF_CLI_ARGS: "-target=x",
        TF_LOG: "TRACE",
        TF_WORKSPACE: "other",
        TF_IN_AUTOMATION: "1",
        TF_INPUT: "0",
        KUBE_CONFIG_PATH: "/elsewhere",
        KUBE_NAMESPACE: "team-a",
        AWS_REGION: "eu-west-1",
        UNSET: undefined,
      },
      "/captf/work",
    );
    expect(env).toEqual({
      PATH: "/usr/bin",
      TF_IN_AUTOMATION: "1",
      TF_INPUT: "0",
      KUBE_NAMESPACE: "team-a",
      AWS_REGION: "eu-west-1",
      TF_DATA_DIR: "/captf/work/.terraform",
      HOME: "/captf/work",
      TMPDIR: "/captf/work/tmp",
    });
    expect(dropped).toEqual(["KUBE_CONFIG_PATH", "TF_CLI_ARGS", "TF_LOG", "TF_VAR_name", "TF_WORKSPACE"]);
  });

  it("names a USER for every runtime command when OpenTofu's tracing is on and the Pod has none (version checks too)", () => {
    expect(stepEnvironment({ OTEL_TRACES_EXPORTER: "otlp" }, "/w").env.USER).toBe("captf-runner");
    expect(stepEnvironment({ OTEL_TRACES_EXPORTER: "otlp", USER: "ops" }, "/w").env.USER).toBe("ops");
    expect(stepEnvironment({}, "/w").env.USER).toBeUndefined();
  });

  it("keeps the Job's TMPDIR and sets TF_CLI_CONFIG_FILE only for a mirror, replacing any inherited one", () => {
    expect(stepEnvironment({ TMPDIR: "/tmp", TF_CLI_CONFIG_FILE: "/evil" }, "/w").env).toEqual({
      TMPDIR: "/tmp",
      TF_DATA_DIR: "/w/.terraform",
      HOME: "/w",
    });
    expect(stepEnvironment({}, "/w", "/w/cli.tfrc").env.TF_CLI_CONFIG_FILE).toBe("/w/cli.tfrc");
  });
});

describe("prepareWorkspace", () => {
  it("copies the top-level files of a Secret mount into a private root, skipping dot-files and directories", async () => {
    const config = join(dir, "secret-mount");
    const timestamped = join(config, "..2026_12_02_10_00_00.123");
    await mkdir(join(config, "restore"), { recursive: true });
    await mkdir(timestamped, { recursive: true });
    await writeFile(join(timestamped, "main.tf.json"), "{}\n");
    await writeFile(join(timestamped, "terraform.tfvars.json"), '{"a":1}\n');
    await symlink("..2026_12_02_10_00_00.123", join(config, "..data"));
    await symlink("..data/main.tf.json", join(config, "main.tf.json"));
    await symlink("..data/terraform.tfvars.json", join(config, "terraform.tfvars.json"));
    await writeFile(join(config, ".hidden"), "no");
    await writeFile(join(config, "restore", "0"), "chunk");
    const workdir = join(dir, "work-a");

    const prepared = await prepareWorkspace({
      configDir: config,
      workdir,
      providersDir: join(dir, "no-mirror"),
      baseEnv: { PATH: "/bin" },
    });

    expect(prepared.rootDir).toBe(join(workdir, "root"));
    expect(((await stat(prepared.rootDir)).mode & 0o777).toString(8)).toBe("700");
    expect(await readFile(join(prepared.rootDir, "terraform.tfvars.json"), "utf8")).toBe('{"a":1}\n');
    expect(((await stat(join(prepared.rootDir, "main.tf.json"))).mode & 0o777).toString(8)).toBe("600");
    await expect(stat(join(prepared.rootDir, ".hidden"))).rejects.toThrow();
    await expect(stat(join(prepared.rootDir, "restore"))).rejects.toThrow();
    expect(prepared.providersMirror).toBe(false);
    expect(prepared.env.TF_CLI_CONFIG_FILE).toBeUndefined();
    expect((await stat(join(workdir, "tmp"))).isDirectory()).toBe(true);
  });

  it("writes the filesystem-mirror CLI config when the image ships providers", async () => {
    const config = join(dir, "config-b");
    const providers = join(dir, "providers");
    await mkdir(config, { recursive: true });
    await mkdir(providers, { recursive: true });
    await writeFile(join(config, "main.tf.json"), "{}");
    const workdir = join(dir, "work-b");

    const prepared = await prepareWorkspace({ configDir: config, workdir, providersDir: providers, baseEnv: { TMPDIR: "/tmp" } });

    expect(prepared.providersMirror).toBe(true);
    expect(prepared.env.TF_CLI_CONFIG_FILE).toBe(join(workdir, "cli.tfrc"));
    const cliConfig = await readFile(join(workdir, "cli.tfrc"), "utf8");
    expect(cliConfig).toContain(`path    = ${JSON.stringify(providers)}`);
    expect(cliConfig).toContain('include = ["*/*/*"]');
  });

  it("names the config directory and what it must hold when it is missing", async () => {
    await expect(
      prepareWorkspace({ configDir: join(dir, "nope"), workdir: join(dir, "work-c"), providersDir: "/nope", baseEnv: {} }),
    ).rejects.toThrow(/config directory .*nope.*main\.tf\.json, terraform\.tfvars\.json/);
  });
});

describe("checkImageLayout", () => {
  let module: string;
  let runtime: string;
  beforeAll(async () => {
    module = join(dir, "module");
    await mkdir(module, { recursive: true });
    await writeFile(join(module, "main.tofu"), "");
    runtime = join(dir, "runtime");
    await writeFile(runtime, "#!/bin/sh\n");
    await chmod(runtime, 0o755);
  });

  it("accepts a module with a top-level configuration file and an executable runtime", async () => {
    await expect(checkImageLayout({ moduleDir: module, bin: [runtime], path: undefined })).resolves.toBeUndefined();
    await expect(checkImageLayout({ moduleDir: module, bin: ["sh"], path: "/nonexistent:/bin:/usr/bin" })).resolves.toBeUndefined();
  });

  it.each<[string, () => { moduleDir: string; bin: string[]; path?: string }, RegExp]>([
    ["a missing module directory", () => ({ moduleDir: join(dir, "missing"), bin: [runtime] }), /no module directory at .*missing/],
    [
      "a module without top-level configuration",
      () => ({ moduleDir: dir, bin: [runtime] }),
      /no top-level \.tf, \.tf\.json, \.tofu or \.tofu\.json file/,
    ],
    ["an empty runtime command", () => ({ moduleDir: module, bin: [""] }), /runtime command is empty/],
    [
      "a missing runtime",
      () => ({ moduleDir: module, bin: [join(dir, "tofu")] }),
      /runtime .*tofu is missing, not a regular file or not executable/,
    ],
    ["a runtime that is a directory", () => ({ moduleDir: module, bin: [module] }), /not a regular file/],
    ["a runtime name not on PATH", () => ({ moduleDir: module, bin: ["no-such-tofu"], path: "/bin" }), /no-such-tofu is not on PATH/],
  ])("rejects %s", async (_name, options, message) => {
    const { moduleDir, bin, path } = options();
    await expect(checkImageLayout({ moduleDir, bin, path })).rejects.toThrow(ImageLayoutError);
    await expect(checkImageLayout({ moduleDir, bin, path })).rejects.toThrow(message);
  });

  it("rejects a runtime without an exec bit", async () => {
    const plain = join(dir, "plain");
    await writeFile(plain, "");
    await chmod(plain, 0o644);
    await expect(checkImageLayout({ moduleDir: module, bin: [plain], path: undefined })).rejects.toThrow(/not executable/);
  });
});

describe("assembleRestoreState", () => {
  const state = JSON.stringify({ version: 4, serial: 7, lineage: "l", resources: [] });

  async function chunked(name: string, payload: Buffer, parts: number): Promise<string> {
    const config = join(dir, name);
    await mkdir(join(config, "restore"), { recursive: true });
    const size = Math.ceil(payload.length / parts);
    for (let index = 0; index < parts; index++)
      await writeFile(join(config, "restore", String(index)), payload.subarray(index * size, (index + 1) * size));
    return config;
  }

  it("joins the gzip chunks and writes the state JSON for state push", async () => {
    const config = await chunked("restore-ok", gzipSync(state), 3);
    const workdir = join(dir, "restore-work");
    await mkdir(workdir, { recursive: true });
    const file = await assembleRestoreState({ configDir: config, workdir, chunks: 3 });
    expect(file).toBe(join(workdir, "restore.tfstate"));
    expect(await readFile(file, "utf8")).toBe(state);
  });

  it.each<[string, () => Promise<{ configDir: string; chunks: number; maxBytes?: number }>, RegExp]>([
    ["no chunk count", async () => ({ configDir: dir, chunks: 0 }), /--restore-chunks between 1 and 32, got 0/],
    ["too many chunks", async () => ({ configDir: dir, chunks: 33 }), /between 1 and 32/],
    [
      "a missing chunk",
      async () => ({ configDir: await chunked("restore-short", gzipSync(state), 1), chunks: 2 }),
      /restore\/1 cannot be read.*restore\/0 … restore\/1/,
    ],
    [
      "data that is not gzip",
      async () => ({ configDir: await chunked("restore-plain", Buffer.from(state), 1), chunks: 1 }),
      /not gzip data/,
    ],
    [
      "a backup that is not JSON",
      async () => ({ configDir: await chunked("restore-text", gzipSync("hello"), 1), chunks: 1 }),
      /not a JSON state document/,
    ],
    [
      "a backup over the size cap",
      async () => ({ configDir: await chunked("restore-big", gzipSync("x".repeat(5000)), 1), chunks: 1, maxBytes: 1000 }),
      /more than 1000 bytes/,
    ],
  ])("rejects %s", async (_name, options, message) => {
    const { configDir, chunks, maxBytes } = await options();
    await expect(assembleRestoreState({ configDir, workdir: dir, chunks, ...(maxBytes ? { maxBytes } : {}) })).rejects.toThrow(message);
  });
});

describe("countManagedAddresses", () => {
  it("counts managed instances, not data sources, whatever module path and keys they sit under", () => {
    const list = [
      "data.terraform_remote_state.x",
      "module.role.terraform_data.a",
      "module.role.data.external.info",
      'module.pool["a.b"].data.http.x',
      'module.pool["a]b"].terraform_data.c[0]',
      "terraform_data.top",
      "",
    ].join("\n");
    expect(countManagedAddresses(list)).toBe(3);
    expect(countManagedAddresses("")).toBe(0);
  });
});
