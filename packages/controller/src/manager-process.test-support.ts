// The manager as a real process for integration tests: the bundle built from source (what the image
// runs), started with flags and an environment, its JSON log collected, stopped by signal.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { request } from "node:https";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleCoverageFlags, childCoverageEnvironment, freeLoopbackPort } from "@captf/testkit";
import { generateServingCertificate, type ServingCertificate } from "./webhooks/certificates.test-support.js";

const bundleScript = fileURLToPath(new URL("../scripts/build-manager-bundle.mjs", import.meta.url));

/** Builds scripts/build-manager-bundle.mjs into `dir` (about 3 s) and returns the path of manager.mjs. */
export function buildManagerBundle(dir: string, commit = "test"): string {
  execFileSync(process.execPath, [bundleScript, "--out", dir, "--commit", commit, ...bundleCoverageFlags()], { stdio: "pipe" });
  return join(dir, "manager.mjs");
}

/** Runs `node <bundle> <args>` to its end: exit code and output. */
export function runManagerBundle(
  bundle: string,
  args: string[],
  env: Record<string, string> = {},
): { code: number | null; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync(process.execPath, [bundle, ...args], {
      env: { PATH: process.env.PATH ?? "", ...childCoverageEnvironment(), ...env },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr: "" };
  } catch (error) {
    const failed = error as { status: number | null; stdout: string; stderr: string };
    return { code: failed.status, stdout: failed.stdout, stderr: failed.stderr };
  }
}

export interface LogRecord {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface ManagerProcess {
  child: ChildProcess;
  /** JSON log lines so far (--logging-format=json), parsed; other lines as `{ level: 0, msg }`. */
  records(): LogRecord[];
  /** Every line of stdout and stderr, for failure messages. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ports: { health: number; metrics: number; webhook: number };
  certificate: ServingCertificate;
}

export interface ManagerProcessOptions {
  bundle: string;
  kubeconfigPath: string;
  /** A temp dir for the serving certificate. */
  dir: string;
  args?: string[];
  env?: Record<string, string>;
}

/** Starts the bundle with loopback probe, metrics and webhook ports and a fresh serving certificate. */
export async function startManagerProcess(options: ManagerProcessOptions): Promise<ManagerProcess> {
  const certificate = generateServingCertificate(join(options.dir, "certs"));
  const ports = { health: await freeLoopbackPort(), metrics: await freeLoopbackPort(), webhook: await freeLoopbackPort() };
  const args = [
    `--kubeconfig=${options.kubeconfigPath}`,
    `--health-addr=127.0.0.1:${ports.health}`,
    `--diagnostics-address=127.0.0.1:${ports.metrics}`,
    `--webhook-port=${ports.webhook}`,
    `--webhook-cert-dir=${join(options.dir, "certs")}`,
    "--logging-format=json",
    ...(options.args ?? []),
  ];
  const child = spawn(process.execPath, [options.bundle, ...args], {
    env: { PATH: process.env.PATH ?? "", ...childCoverageEnvironment(), ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const collect = (stream: NodeJS.ReadableStream) => {
    let partial = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop() ?? "";
      lines.push(...parts.filter(Boolean));
    });
  };
  collect(child.stdout!);
  collect(child.stderr!);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    records: () =>
      lines.map((line) => {
        try {
          return JSON.parse(line) as LogRecord;
        } catch {
          return { level: 0, msg: line };
        }
      }),
    output: () => lines.join("\n"),
    exited,
    ports,
    certificate,
  };
}

/** Stops the process if it still runs (SIGKILL), for afterAll. */
export async function killManagerProcess(manager: ManagerProcess | undefined): Promise<void> {
  if (!manager || manager.child.exitCode !== null || manager.child.signalCode !== null) return;
  manager.child.kill("SIGKILL");
  await manager.exited;
}

/** GET (or POST `json`) over HTTPS trusting the PEM `ca`, with an optional bearer token. */
export function httpsRequest(
  url: string,
  ca: string,
  options: { token?: string; json?: unknown } = {},
): Promise<{ status: number; body: string }> {
  const body = options.json === undefined ? undefined : JSON.stringify(options.json);
  const headers: Record<string, string> = {
    ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}),
    ...(body === undefined ? {} : { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(body)) }),
  };
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, method: body === undefined ? "GET" : "POST", headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
