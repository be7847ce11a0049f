// attack.cjs against a real kube-apiserver and the runner's real state broker (its built CLI, as a
// Job's sidecar runs it), the runner ServiceAccount holding the broad rights it had before the broker
// (every Secret, Lease, event, Pod and Job of its namespace): through the broker every attempt is
// refused and the own-state control answers; with that ServiceAccount's token planted where the
// credential search looks, the same direct attempts succeed. So the drill's verdicts can fail.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { request as httpsRequest } from "node:https";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { describeWithTools, startControlPlane, type ControlPlane } from "@captf/testkit";
import { hostileModuleDirectory, type Attempt } from "./index.js";

const runnerEntry = fileURLToPath(new URL("../../runner/dist/entry.js", import.meta.url));
const namespace = "team-a";
const victimSuffix = "0123456789abcdef-m";
const selfSuffix = "fedcba9876543210-m";
const targets = {
  namespace,
  cluster: "c1",
  victim: {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
    kind: "TerraformMachine",
    name: "c1-victim",
    uid: "00000000-0000-4000-8000-000000000001",
    stateSuffix: victimSuffix,
  },
  self: { name: "c1-hostile", stateSuffix: selfSuffix },
  victimRunSecret: "captf-run-victim",
  credentialMirror: "captf-creds-noop",
};

describeWithTools(["etcd", "kube-apiserver"], "attack.cjs against the API server and the state broker", () => {
  let plane: ControlPlane;
  let work = "";
  let broker: ChildProcess | undefined;
  let token = "";
  const env = (): NodeJS.ProcessEnv => {
    const server = new URL(plane.server);
    return {
      PATH: process.env.PATH,
      KUBERNETES_SERVICE_HOST: server.hostname,
      KUBERNETES_SERVICE_PORT: server.port,
      POD_NAME: "hostile-test",
    };
  };
  /** An admin request; resolves the status code, and the answer's JSON through `answer`. */
  const api = (method: string, path: string, body?: unknown, answer?: (json: unknown) => void) =>
    new Promise<number>((resolve, reject) => {
      const request = httpsRequest(
        new URL(path, plane.server),
        { method, ca: readFileSync(plane.caFile), headers: { authorization: `Bearer ${plane.token}`, "content-type": "application/json" } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () => {
            answer?.(JSON.parse(Buffer.concat(chunks).toString("utf8")));
            resolve(response.statusCode ?? 0);
          });
        },
      );
      request.on("error", reject);
      request.end(body === undefined ? undefined : JSON.stringify(body));
    });

  beforeAll(async () => {
    plane = await startControlPlane();
    work = mkdtempSync(join(tmpdir(), "captf-hostile-apiserver-"));
    for (const dir of ["sa", "broker", "scan"]) mkdirSync(join(work, dir));
    const rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces";
    expect(await api("POST", "/api/v1/namespaces", { metadata: { name: namespace } })).toBe(201);
    expect(await api("POST", `/api/v1/namespaces/${namespace}/serviceaccounts`, { metadata: { name: "captf-runner" } })).toBe(201);
    const rules = [
      {
        apiGroups: ["", "coordination.k8s.io", "events.k8s.io", "batch"],
        resources: ["secrets", "leases", "events", "pods", "jobs"],
        verbs: ["*"],
      },
    ];
    expect(await api("POST", `${rbac}/${namespace}/roles`, { metadata: { name: "broad" }, rules })).toBe(201);
    expect(
      await api("POST", `${rbac}/${namespace}/rolebindings`, {
        metadata: { name: "broad" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "broad" },
        subjects: [{ kind: "ServiceAccount", name: "captf-runner", namespace }],
      }),
    ).toBe(201);
    const state = (name: string) => ({
      metadata: { name, labels: { tfstate: "true" } },
      data: { tfstate: gzipSync("{}").toString("base64") },
    });
    for (const name of [
      `tfstate-default-${victimSuffix}`,
      `tfstate-default-${selfSuffix}`,
      "c1-kubeconfig",
      "c1-ca",
      targets.victimRunSecret,
      targets.credentialMirror,
    ])
      expect(await api("POST", `/api/v1/namespaces/${namespace}/secrets`, state(name))).toBe(201);
    expect(
      await api("POST", `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, {
        metadata: { name: `lock-tfstate-default-${victimSuffix}` },
        spec: { holderIdentity: "victim" },
      }),
    ).toBe(201);

    expect(
      await api(
        "POST",
        `/api/v1/namespaces/${namespace}/serviceaccounts/captf-runner/token`,
        { spec: { expirationSeconds: 3600 } },
        (json) => (token = (json as { status: { token: string } }).status.token),
      ),
    ).toBe(201);
    writeFileSync(join(work, "sa", "token"), token);
    writeFileSync(join(work, "sa", "ca.crt"), readFileSync(plane.caFile));
    const object = `infrastructure.cluster.x-k8s.io/v1alpha1/TerraformMachine/${namespace}/c1-hostile/00000000-0000-4000-8000-000000000002`;
    broker = spawn(
      process.execPath,
      [
        runnerEntry,
        "broker",
        `--event-object=${object}`,
        `--state-suffix=${selfSuffix}`,
        "--job-name=captf-m-c1-hostile-apply-a1-abcdef",
        `--dir=${join(work, "broker")}`,
        `--service-account-dir=${join(work, "sa")}`,
        `--result=${join(work, "broker-summary")}`,
      ],
      { env: env(), stdio: "ignore" },
    );
    for (let waited = 0; !existsSync(join(work, "broker", "kubeconfig")); waited += 20) {
      if (waited > 20_000) throw new Error("the broker wrote no kubeconfig within 20 s");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }, 120_000);

  afterAll(async () => {
    if (broker && broker.exitCode === null) {
      const exited = new Promise((resolve) => broker!.once("exit", resolve));
      broker.kill("SIGTERM");
      await exited;
    }
    await plane?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  /** Runs one phase of attack.cjs on this host and returns its attempts. */
  const attack = async (phase: string): Promise<Attempt[]> => {
    const reportFile = join(work, `${phase}.tfstate`);
    await promisify(execFile)(process.execPath, [join(hostileModuleDirectory, "attack.cjs"), phase], {
      env: {
        ...env(),
        HOSTILE_TARGETS: JSON.stringify(targets),
        HOSTILE_REPORT_FILE: reportFile,
        HOSTILE_BROKER_KUBECONFIG: join(work, "broker", "kubeconfig"),
        HOSTILE_SCAN_ROOTS: join(work, "scan"),
        HOSTILE_TERMINATION_LOG: join(work, "termination-log"),
      },
    });
    const state = JSON.parse(readFileSync(reportFile, "utf8")) as { outputs: { attempts_json: { value: string } } };
    return JSON.parse(state.outputs.attempts_json.value) as Attempt[];
  };
  const outcomes = (attempts: Attempt[], via: string) => [
    ...new Set(attempts.filter((attempt) => attempt.via === via && !attempt.control).map((attempt) => attempt.outcome)),
  ];

  it("is refused everything through the broker and anonymously, while its own state answers", async () => {
    const attempts = await attack("init");
    expect(attempts.filter((attempt) => attempt.via === "broker").length).toBeGreaterThan(25);
    expect(outcomes(attempts, "broker")).toEqual(["refused"]);
    expect(outcomes(attempts, "direct")).toEqual(["refused"]);
    expect(attempts.filter((attempt) => attempt.control).map((attempt) => attempt.outcome)).toEqual(["succeeded"]);
    expect(attempts.find((attempt) => attempt.target === "broker-token")?.outcome).toBe("succeeded");
    // The broker saw the refusals: its summary counts them once it stops.
  }, 60_000);

  it("with the ServiceAccount's token planted where it looks, finds it and reaches the victim directly", async () => {
    writeFileSync(join(work, "scan", "token"), token);
    const attempts = await attack("apply");
    expect(attempts.find((attempt) => attempt.attempt.startsWith("scan "))).toMatchObject({
      outcome: "succeeded",
      detail: expect.stringContaining(`system:serviceaccount:${namespace}:captf-runner`),
    });
    const direct = attempts
      .filter((attempt) => attempt.via === "direct" && attempt.outcome === "succeeded")
      .map((attempt) => attempt.target);
    expect(new Set(direct)).toEqual(
      new Set([
        "kubeconfig-secret",
        "ca-secret",
        "victim-state",
        "victim-run-secret",
        "credential-mirror",
        "victim-lock",
        "pod",
        "job",
        "victim-event",
      ]),
    );
    // The broker is no way around: the token does not pass it.
    expect(outcomes(attempts, "broker")).toEqual(["refused"]);
    for (const attempt of attempts) expect(JSON.stringify(attempt)).not.toContain(token);
  }, 60_000);
});
