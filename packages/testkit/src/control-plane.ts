import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, closeSync } from "node:fs";
import { createServer } from "node:net";
import { get } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireTool } from "./tools.js";

/** A running local control plane: etcd, kube-apiserver and (optionally) kube-controller-manager. */
export interface ControlPlane {
  /** The temp dir holding data, certificates, logs and the kubeconfig; removed by stop(). */
  readonly dir: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** A bearer token of a `system:masters` user. */
  readonly token: string;
  /** The API server's serving certificate, usable as the CA to verify it. */
  readonly caFile: string;
  /** An admin kubeconfig for the plane. */
  readonly kubeconfigPath: string;
  /** Milliseconds from the first process start until every component answered ready. */
  readonly startMillis: number;
  stop(): Promise<void>;
}

/** What a test process needs to reach a plane started elsewhere (for example by jest's globalSetup). */
export type ControlPlaneConnection = Pick<ControlPlane, "dir" | "server" | "token" | "caFile" | "kubeconfigPath" | "startMillis">;

export interface ControlPlaneOptions {
  /** Start kube-controller-manager, so Jobs create Pods and garbage collection runs. Default true. */
  controllerManager?: boolean;
  /** How long to wait for each component to become ready. Default 120 s. */
  readyTimeoutMillis?: number;
  /**
   * Flags appended to kube-controller-manager's, e.g. `--kube-api-qps=200`: a benchmark of the manager
   * lifts the Job controller's client rate limit (20 requests/s by default) so that it does not set the pace.
   */
  controllerManagerFlags?: readonly string[];
}

interface Component {
  name: string;
  process: ChildProcess;
  logFile: string;
}

/** A loopback TCP port nothing listens on right now. */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

function startComponent(dir: string, name: string, binary: string, args: string[]): Component {
  const logFile = join(dir, `${name}.log`);
  const fd = openSync(logFile, "a");
  const child = spawn(binary, args, { stdio: ["ignore", fd, fd], detached: false });
  closeSync(fd);
  return { name, process: child, logFile };
}

/** GET a path over HTTP(S) with a token, resolving the status code (0 when the connection failed). */
function probe(url: string, token?: string, caFile?: string): Promise<number> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
    const req = get(
      url,
      { headers, ca: caFile ? readFileSync(caFile) : undefined, rejectUnauthorized: Boolean(caFile), timeout: 2000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", () => resolve(0));
    req.on("timeout", () => req.destroy());
  });
}

async function waitReady(component: Component, check: () => Promise<boolean>, timeoutMillis: number): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    if (component.process.exitCode !== null || component.process.signalCode !== null) {
      throw new Error(
        `${component.name} exited (${component.process.exitCode ?? component.process.signalCode}) before it was ready; its log ` +
          `ends:\n${tail(component.logFile)}`,
      );
    }
    if (await check()) return;
    if (Date.now() > deadline)
      throw new Error(`${component.name} was not ready after ${timeoutMillis / 1000}s; its log ends:\n${tail(component.logFile)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function stopComponent(component: Component): Promise<void> {
  const child = component.process;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

export function writeKubeconfig(path: string, connection: { server: string; token: string; caFile: string }): void {
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: captf-test",
      "  cluster:",
      `    server: ${connection.server}`,
      `    certificate-authority: ${connection.caFile}`,
      "users:",
      "- name: admin",
      "  user:",
      `    token: ${connection.token}`,
      "contexts:",
      "- name: captf-test",
      "  context: {cluster: captf-test, user: admin}",
      "current-context: captf-test",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
}

/**
 * Starts etcd, kube-apiserver and kube-controller-manager on free loopback ports in a temp
 * dir and waits until each is ready. The API server authenticates a `system:masters` token
 * and serves a self-signed certificate; service-account admission is off so Pods need no
 * token Secret. stop() stops each process by its PID and removes the dir.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const timeout = options.readyTimeoutMillis ?? 120_000;
  const etcd = requireTool("etcd");
  const apiserver = requireTool("kube-apiserver");
  const controllerManager = options.controllerManager === false ? undefined : requireTool("kube-controller-manager");

  const dir = mkdtempSync(join(tmpdir(), "captf-plane-"));
  const certs = join(dir, "certs");
  mkdirSync(certs);
  const components: Component[] = [];
  const started = Date.now();
  const stop = async (): Promise<void> => {
    for (const component of [...components].reverse()) await stopComponent(component);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const [clientPort, peerPort, apiPort, kcmPort] = await Promise.all([
      freeLoopbackPort(),
      freeLoopbackPort(),
      freeLoopbackPort(),
      freeLoopbackPort(),
    ]);
    const etcdComponent = startComponent(dir, "etcd", etcd, [
      "--name=captf",
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=http://127.0.0.1:${clientPort}`,
      `--advertise-client-urls=http://127.0.0.1:${clientPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=captf=http://127.0.0.1:${peerPort}`,
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ]);
    components.push(etcdComponent);

    execFileSync("openssl", ["genrsa", "-out", join(certs, "sa.key"), "2048"], { stdio: "ignore" });
    execFileSync("openssl", ["rsa", "-in", join(certs, "sa.key"), "-pubout", "-out", join(certs, "sa.pub")], { stdio: "ignore" });
    const token = randomBytes(24).toString("hex");
    writeFileSync(join(dir, "tokens.csv"), `${token},captf-admin,captf-admin,"system:masters"\n`, { mode: 0o600 });
    await waitReady(etcdComponent, async () => (await probeHttp(`http://127.0.0.1:${clientPort}/health`)) === 200, timeout);

    const server = `https://127.0.0.1:${apiPort}`;
    const apiComponent = startComponent(dir, "kube-apiserver", apiserver, [
      `--etcd-servers=http://127.0.0.1:${clientPort}`,
      `--cert-dir=${certs}`,
      `--secure-port=${apiPort}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--token-auth-file=${join(dir, "tokens.csv")}`,
      "--authorization-mode=RBAC",
      "--service-cluster-ip-range=10.0.0.0/24",
      "--allow-privileged=true",
      "--disable-admission-plugins=ServiceAccount",
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${join(certs, "sa.pub")}`,
      `--service-account-signing-key-file=${join(certs, "sa.key")}`,
    ]);
    components.push(apiComponent);
    const caFile = join(certs, "apiserver.crt");
    await waitReady(apiComponent, async () => (await probe(`${server}/readyz`, token)) === 200, timeout);

    const kubeconfigPath = join(dir, "kubeconfig");
    writeKubeconfig(kubeconfigPath, { server, token, caFile });

    if (controllerManager) {
      const kcm = startComponent(dir, "kube-controller-manager", controllerManager, [
        `--kubeconfig=${kubeconfigPath}`,
        `--authentication-kubeconfig=${kubeconfigPath}`,
        `--authorization-kubeconfig=${kubeconfigPath}`,
        `--secure-port=${kcmPort}`,
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        `--service-account-private-key-file=${join(certs, "sa.key")}`,
        `--root-ca-file=${caFile}`,
        "--cluster-name=captf-test",
        ...(options.controllerManagerFlags ?? []),
      ]);
      components.push(kcm);
      await waitReady(kcm, async () => (await probe(`https://127.0.0.1:${kcmPort}/healthz`)) === 200, timeout);
    }

    return { dir, server, token, caFile, kubeconfigPath, startMillis: Date.now() - started, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function probeHttp(url: string): Promise<number> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return response.status;
  } catch {
    return 0;
  }
}
