import { spawn } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { gunzipSync } from "node:zlib";
import type * as k8s from "@kubernetes/client-node";
import { stateLockLeaseName, stateSecretName } from "@captf/render";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { requireTool, type RuntimeName } from "@captf/testkit";
import { main } from "./cli.js";
import type { RunResult } from "@captf/contract/run-result";

const testdata = join(dirname(fileURLToPath(import.meta.url)), "testdata");

/** Makes the runtime merge a local backend over the generated root's kubernetes one. */
export const localBackendOverride = { terraform: { backend: { local: {} } } };

export interface RunnerRun {
  exitCode: number;
  result: RunResult;
  stdout: string;
  stderr: string;
}

export interface RunnerCall {
  /** Extra `runner run` flags after --op. */
  args?: string[];
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** Sees the runner's stdout as it is written. */
  onStdout?: (text: string) => void;
  /** Another config directory (a restore's backend root). */
  configDir?: string;
  /** Another work directory (a fresh Job). */
  workdir?: string;
  /** The -backend-config values instead of the fixture's local state file. */
  backendConfig?: string[];
}

/**
 * One module image's worth of directories (`module`, `config`, `work`) laid out as in a Job, so
 * the root's `../../module` source resolves. State goes to one local file shared by every work
 * directory of the fixture, through `--backend-config path=…`.
 */
/** The parts of a local state file the tests read. */
export interface LocalState {
  serial: number;
  outputs: Record<string, { value: unknown }>;
  resources: { module?: string; type: string; name: string }[];
}

export class RunnerFixture {
  /** The runtime binary the runs use (`--bin`). */
  readonly runtime: string;

  private constructor(
    readonly base: string,
    readonly runtimeName: RuntimeName,
  ) {
    this.runtime = requireTool(runtimeName);
  }

  get moduleDir(): string {
    return join(this.base, "module");
  }
  get configDir(): string {
    return join(this.base, "config");
  }
  get workdir(): string {
    return join(this.base, "work");
  }
  get statePath(): string {
    return join(this.base, "terraform.tfstate");
  }

  /** A fixture for the testdata module `moduleName` under `runtime`, with a root passing `variables` through. */
  static async create(
    moduleName: string,
    root: { variables: Record<string, { type: string; sensitive?: boolean }>; outputs?: string[] },
    runtime: RuntimeName = "tofu",
  ): Promise<RunnerFixture> {
    const fixture = new RunnerFixture(await mkdtemp(join(tmpdir(), `runner-${runtime}-${moduleName}-`)), runtime);
    await cp(join(testdata, moduleName), fixture.moduleDir, { recursive: true });
    await mkdir(fixture.configDir, { recursive: true });
    const main = {
      terraform: { backend: { kubernetes: {} } },
      variable: root.variables,
      module: {
        role: { source: "../../module", ...Object.fromEntries(Object.keys(root.variables).map((name) => [name, `\${var.${name}}`])) },
      },
      ...(root.outputs
        ? { output: Object.fromEntries(root.outputs.map((name) => [name, { value: `\${module.role.${name}}`, sensitive: true }])) }
        : {}),
    };
    await fixture.writeConfig("main.tf.json", main);
    await fixture.writeConfig("backend_override.tf.json", localBackendOverride);
    return fixture;
  }

  async writeConfig(name: string, document: unknown, configDir = this.configDir): Promise<void> {
    await mkdir(configDir, { recursive: true });
    await writeFile(join(configDir, name), JSON.stringify(document, null, 2) + "\n");
  }

  async setInputs(values: Record<string, unknown>): Promise<void> {
    await this.writeConfig("terraform.tfvars.json", values);
  }

  /** Runs `runner run --op <op>` in-process, as a Job would, and reads back its result. */
  async run(op: string, call: RunnerCall = {}): Promise<RunnerRun> {
    const resultPath = join(this.base, `result-${op}.json`);
    let stdout = "";
    let stderr = "";
    const exitCode = await main(
      [
        "run",
        `--op=${op}`,
        `--bin=${this.runtime}`,
        "--image=registry.example/noop:v1",
        `--module=${this.moduleDir}`,
        `--providers=${join(this.base, "no-providers")}`,
        `--workdir=${call.workdir ?? this.workdir}`,
        `--config=${call.configDir ?? this.configDir}`,
        ...(call.backendConfig ?? [`path=${this.statePath}`]).map((value) => `--backend-config=${value}`),
        `--result=${resultPath}`,
        "--stop-timeout=5s",
        ...(call.args ?? []),
      ],
      {
        stdout: (text) => {
          stdout += text;
          call.onStdout?.(text);
        },
        stderr: (text) => (stderr += text),
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...call.env },
        ...(call.signal ? { signal: call.signal } : {}),
      },
    );
    const result = JSON.parse(await readFile(resultPath, "utf8")) as RunResult;
    return { exitCode, result, stdout, stderr };
  }

  /** The local state file the runs share. */
  async state(): Promise<LocalState> {
    return JSON.parse(await readFile(this.statePath, "utf8")) as LocalState;
  }

  /**
   * Leaves a stale lock as a killed Job would: a real apply of the runtime (inputs as set, a long
   * sleep_seconds) takes the lock in the kubernetes backend, then is SIGKILLed. Returns the lock's ID.
   */
  async leaveStaleLock(backendConfig: string[], coordination: k8s.CoordinationV1Api, namespace: string, suffix: string): Promise<string> {
    const work = join(this.base, "killed");
    await mkdir(join(work, "root"), { recursive: true });
    for (const file of ["main.tf.json", "terraform.tfvars.json"])
      await writeFile(join(work, "root", file), await readFile(join(this.configDir, file)));
    await writeFile(join(work, "cli.tfrc"), "");
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: work,
      TF_CLI_CONFIG_FILE: join(work, "cli.tfrc"),
      TF_DATA_DIR: join(work, ".terraform"),
      TF_IN_AUTOMATION: "1",
    };
    // The root's module source is ../../module: from <base>/killed/root it resolves to the fixture's module.
    await new Promise<void>((resolve, reject) => {
      const init = spawn(this.runtime, ["init", "-input=false", ...backendConfig.map((value) => `-backend-config=${value}`)], {
        cwd: join(work, "root"),
        env,
        stdio: "ignore",
      });
      init.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${this.runtimeName} init exited ${code}`))));
    });
    const apply = spawn(this.runtime, ["apply", "-auto-approve", "-input=false"], {
      cwd: join(work, "root"),
      env,
      stdio: "ignore",
      detached: true,
    });
    let holder: string | undefined;
    for (let i = 0; i < 150 && !holder; i++) {
      await new Promise((r) => setTimeout(r, 100));
      holder =
        (await coordination.readNamespacedLease({ name: stateLockLeaseName(suffix), namespace }).catch(() => undefined))?.spec
          ?.holderIdentity ?? undefined;
    }
    process.kill(-apply.pid!, "SIGKILL");
    await new Promise((r) => apply.once("exit", r));
    if (!holder) throw new Error(`${this.runtimeName} apply took no lock within 15 s`);
    return holder;
  }

  async remove(): Promise<void> {
    await rm(this.base, { recursive: true, force: true });
  }
}

/** The state a kubernetes backend keeps in `tfstate-default-<suffix>`, decoded, and its gzip as stored. */
export async function stateInSecret(
  core: k8s.CoreV1Api,
  namespace: string,
  suffix: string,
): Promise<{ serial: number; outputs: Record<string, { value: unknown }>; gzip: Buffer }> {
  const secret = await core.readNamespacedSecret({ name: stateSecretName(suffix), namespace });
  const gzip = Buffer.from(secret.data!.tfstate!, "base64");
  const state = JSON.parse(gunzipSync(gzip).toString("utf8")) as { serial: number; outputs: Record<string, { value: unknown }> };
  return { ...state, gzip };
}

export function stepNamesOf(run: RunnerRun): string[] {
  return run.result.steps.map((step) => step.name);
}

/** The runner's own log lines (one JSON object a line on its stderr), the runtime's output left out. */
export function logLinesOf(run: RunnerRun): Record<string, unknown>[] {
  return run.stderr
    .split("\n")
    .filter((line) => line.startsWith('{"ts":'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
