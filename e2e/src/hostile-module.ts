// The hostile module on the plane (packages/module-hostile): its images, the loopback server its
// attacks report to, the targets it is given, and the tally the e2e and bench/drills/hostile-module.mjs
// judge. Its image's /captf/runtime is a node script that attacks before every step and then runs the
// real runtime, which scripts/build-module-image.mjs does not make: the image is built by it with the
// wrapper as runtime, then gets /captf/runtime.real in one more layer (umoci).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { labels } from "@captf/contract/api";
import { hostileModuleDirectory, hostileRuntimeWrapper, type Attempt, type PhaseReport } from "@captf/module-hostile";
import {
  buildModuleImage,
  hostArchitecture,
  moduleRuntimes,
  pushImage,
  requireTool,
  runtimeVersion,
  type RuntimeName,
} from "@captf/testkit/plane";
import type { LastRun, TerraformObject } from "./objects.js";

export const forgedStepMilliseconds = 4_242_042;
export const forgedImageRef = "forged-by-hostile-module";

/** What the attacks aim at: `hostile_targets` (JSON) of the module. */
export interface HostileTargets {
  namespace: string;
  cluster: string;
  victim: { apiVersion: string; kind: string; name: string; uid: string; stateSuffix: string };
  victimRunSecret?: string;
  credentialMirror?: string;
}

/** The tag of the hostile machine image of a runtime, beside the no-op images. */
export function hostileImageTag(runtime: RuntimeName): string {
  return `v0.1.0-${moduleRuntimes[runtime].imageTagSuffix}`;
}

/**
 * Builds the hostile machine image of `runtime` into `layout` and pushes it to `registryHost`
 * as `captf/hostile-machine:<tag>`: this machine's architecture only, with the wrapper at
 * /captf/runtime and the runtime at /captf/runtime.real. Returns the reference.
 */
export function buildAndPushHostileImage(registryHost: string, layout: string, runtime: RuntimeName): string {
  const tag = `hostile-machine-${hostileImageTag(runtime)}`;
  buildModuleImage(layout, tag, {
    moduleDir: hostileModuleDirectory,
    runtime: hostileRuntimeWrapper,
    runtimeVersion: runtimeVersion(runtime),
    runtimeName: runtime,
    role: "machine",
  });
  const platformRef = `${tag}-${hostArchitecture}`;
  const staged = mkdtempSync(join(tmpdir(), "captf-hostile-runtime-"));
  try {
    mkdirSync(join(staged, "captf"));
    copyFileSync(requireTool(runtime), join(staged, "captf", "runtime.real"));
    chmodSync(join(staged, "captf", "runtime.real"), 0o755);
    // The platform image itself: the tag's index would still name the manifest without this layer.
    execFileSync(
      "umoci",
      [
        "insert",
        "--image",
        `${layout}:${platformRef}`,
        "--history.created_by",
        `${runtime} at /captf/runtime.real (the hostile wrapper runs it)`,
        staged,
        "/",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
  } finally {
    rmSync(staged, { recursive: true, force: true });
  }
  const reference = `${registryHost}/captf/hostile-machine:${hostileImageTag(runtime)}`;
  pushImage(layout, platformRef, reference);
  return reference;
}

export interface ReportServer {
  /** For the module's `report_url`: on loopback, which the plane's Pods share with the host. */
  url: string;
  readonly reports: readonly PhaseReport[];
  close(): Promise<void>;
}

/** A loopback server collecting every report the attacks POST. */
export async function startReportServer(): Promise<ReportServer> {
  const reports: PhaseReport[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      try {
        reports.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as PhaseReport);
        response.writeHead(204).end();
      } catch {
        response.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`,
    reports,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Attempts at a Kubernetes credential or at anything of another object: what must all be refused. */
export function isBoundaryAttempt(attempt: Attempt): boolean {
  return !attempt.control && !attempt.observed && attempt.target !== "broker-token";
}

export interface TallyRow {
  via: Attempt["via"];
  target: string;
  attempts: number;
  refused: number;
  succeeded: number;
  errors: number;
}

/** Attempts and their outcomes per kind (`via` × target), in a stable order. */
export function tally(attempts: readonly Attempt[]): TallyRow[] {
  const rows = new Map<string, TallyRow>();
  for (const attempt of attempts) {
    const key = `${attempt.via}\u0000${attempt.target}`;
    const row = rows.get(key) ?? { via: attempt.via, target: attempt.target, attempts: 0, refused: 0, succeeded: 0, errors: 0 };
    row.attempts++;
    if (attempt.outcome === "refused") row.refused++;
    else if (attempt.outcome === "succeeded") row.succeeded++;
    else row.errors++;
    rows.set(key, row);
  }
  return [...rows.values()].sort((a, b) => a.via.localeCompare(b.via) || a.target.localeCompare(b.target));
}

/** One line per attempt that was not refused (besides controls), for a failure message. */
export function describeAttempts(attempts: readonly Attempt[]): string {
  return attempts
    .map((attempt) => `${attempt.phase} ${attempt.via} ${attempt.target} ${attempt.outcome}: ${attempt.attempt}: ${attempt.detail}`)
    .join("\n");
}

const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };

/** A TerraformMachine's apply Jobs, oldest first. */
async function jobsOf(kubeConfig: k8s.KubeConfig, namespace: string, machine: string): Promise<k8s.V1Job[]> {
  const jobs = await kubeConfig
    .makeApiClient(k8s.BatchV1Api)
    .listNamespacedJob({ namespace, labelSelector: `${labels.ownerKind}=TerraformMachine,${labels.ownerName}=${machine}` });
  return jobs.items.sort((a, b) => String(a.metadata!.creationTimestamp).localeCompare(String(b.metadata!.creationTimestamp)));
}

/**
 * The targets of an attack on `victim` (a TerraformMachine that has applied): its uid and state
 * suffix (from its apply Job's backend flags, as the manager rendered them), its apply Job's run
 * Secret, and the namespace's credential mirror, if any.
 */
export async function victimTargets(
  kubeConfig: k8s.KubeConfig,
  namespace: string,
  cluster: string,
  victim: string,
): Promise<HostileTargets> {
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const machine = (await custom.getNamespacedCustomObject({
    ...infra,
    namespace,
    plural: "terraformmachines",
    name: victim,
  })) as TerraformObject;
  const apply = (await jobsOf(kubeConfig, namespace, victim)).find(
    (job) => job.metadata!.labels![labels.op] === "apply" && job.status?.succeeded === 1,
  );
  if (!apply) throw new Error(`TerraformMachine ${namespace}/${victim} has no succeeded apply Job to take its state suffix from`);
  const args = apply.spec!.template.spec!.containers.find((container) => container.name === "source")!.args ?? [];
  const stateSuffix = args
    .find((arg) => arg.startsWith("--backend-config=secret_suffix="))
    ?.slice("--backend-config=secret_suffix=".length);
  if (!stateSuffix) throw new Error(`Job ${apply.metadata!.name} passes no secret_suffix`);
  const mirror = (await kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedSecret({ namespace, labelSelector: labels.mirrored }))
    .items[0]?.metadata?.name;
  return {
    namespace,
    cluster,
    victim: {
      apiVersion: `${infra.group}/${infra.version}`,
      kind: "TerraformMachine",
      name: victim,
      uid: machine.metadata.uid,
      stateSuffix,
    },
    victimRunSecret: `captf-run-${apply.metadata!.name}`,
    ...(mirror ? { credentialMirror: mirror } : {}),
  };
}

/** What must not change: each object's resourceVersion and a digest of its data, or "absent". */
export type Snapshot = Record<string, string>;

const digest = (value: unknown) =>
  createHash("sha256")
    .update(JSON.stringify(value ?? null))
    .digest("hex")
    .slice(0, 16);

/** The victim's state Secrets (with chunks) and lock, its run Secret, the credential mirror, the cluster's kubeconfig and CA. */
export async function snapshotVictim(kubeConfig: k8s.KubeConfig, targets: HostileTargets): Promise<Snapshot> {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const coordination = kubeConfig.makeApiClient(k8s.CoordinationV1Api);
  const { namespace } = targets;
  const snapshot: Snapshot = {};
  const state = `tfstate-default-${targets.victim.stateSuffix}`;
  const secrets = [
    `${targets.cluster}-kubeconfig`,
    `${targets.cluster}-ca`,
    state,
    ...(targets.victimRunSecret ? [targets.victimRunSecret] : []),
    ...(targets.credentialMirror ? [targets.credentialMirror] : []),
  ];
  for (const secret of (await core.listNamespacedSecret({ namespace })).items)
    if (secret.metadata!.name!.startsWith(`${state}-part-`)) secrets.push(secret.metadata!.name!);
  for (const name of secrets) {
    // The manager re-mirrors the credentials (a new resourceVersion, the same data): only their data counts.
    const version = (secret: k8s.V1Secret) => (name === targets.credentialMirror ? "" : `${secret.metadata!.resourceVersion} `);
    snapshot[`Secret/${name}`] = await core.readNamespacedSecret({ namespace, name }).then(
      (secret) => `${version(secret)}${digest(secret.data)}`,
      (error) => ((error as { code?: number }).code === 404 ? "absent" : Promise.reject(error)),
    );
  }
  const lease = `lock-tfstate-default-${targets.victim.stateSuffix}`;
  snapshot[`Lease/${lease}`] = await coordination.readNamespacedLease({ namespace, name: lease }).then(
    (found) => `${found.metadata!.resourceVersion} ${digest(found.spec)}`,
    (error) => ((error as { code?: number }).code === 404 ? "absent" : Promise.reject(error)),
  );
  return snapshot;
}

/** What differs between two snapshots, one line each. */
export function snapshotChanges(before: Snapshot, after: Snapshot): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((key) => before[key] !== after[key])
    .map((key) => `${key}: ${before[key] ?? "absent"} → ${after[key] ?? "absent"}`);
}

/** Pods and Jobs the attacks would have created (`hostile-<phase>-…`), and events they would have posted. */
export async function hostileLeftovers(kubeConfig: k8s.KubeConfig, namespace: string): Promise<string[]> {
  const pods = (await kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace })).items.map(
    (pod) => `Pod/${pod.metadata!.name}`,
  );
  const jobs = (await kubeConfig.makeApiClient(k8s.BatchV1Api).listNamespacedJob({ namespace })).items.map(
    (job) => `Job/${job.metadata!.name}`,
  );
  const events = (await kubeConfig.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace })).items
    .filter((event) => event.note === "hostile module: forged")
    .map((event) => `Event/${event.metadata!.name}`);
  return [...pods, ...jobs].filter((name) => name.includes("/hostile-")).concat(events);
}

/** What the manager recorded of the hostile object's Jobs, read while they exist. */
export interface HostileRecord {
  /** The object's status.lastRun as the manager wrote it. */
  lastRun: LastRun | undefined;
  /** status.lastRun carries the forged result's marker step. */
  forgedRecorded: boolean;
  /** Jobs whose source container's termination message is the forged document (what the kubelet reported). */
  forgedTerminationMessages: string[];
  /** The object's Jobs (name, op, succeeded). */
  jobs: { name: string; op: string; succeeded: boolean }[];
}

export async function readHostileRecord(kubeConfig: k8s.KubeConfig, namespace: string, machine: string): Promise<HostileRecord> {
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const object = (await custom.getNamespacedCustomObject({
    ...infra,
    namespace,
    plural: "terraformmachines",
    name: machine,
  })) as TerraformObject;
  const lastRun = object.status?.lastRun;
  const jobs = await jobsOf(kubeConfig, namespace, machine);
  const pods = (
    await kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace, labelSelector: `${labels.ownerName}=${machine}` })
  ).items;
  const forgedTerminationMessages = pods
    .filter((pod) =>
      pod.status?.containerStatuses?.some(
        (status) => status.name === "source" && (status.state?.terminated?.message ?? "").includes(forgedImageRef),
      ),
    )
    .map((pod) => pod.metadata!.labels?.["job-name"] ?? pod.metadata!.name!);
  return {
    lastRun,
    forgedRecorded: (lastRun?.steps ?? []).some((step) => step.durationMilliseconds === forgedStepMilliseconds),
    forgedTerminationMessages,
    jobs: jobs.map((job) => ({ name: job.metadata!.name!, op: job.metadata!.labels![labels.op]!, succeeded: job.status?.succeeded === 1 })),
  };
}

/** BrokerRefused events about the object, counted per Job (the event's `related`). */
export async function brokerRefusalsPerJob(
  kubeConfig: k8s.KubeConfig,
  namespace: string,
  machine: string,
): Promise<Record<string, number>> {
  const events = (await kubeConfig.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace })).items;
  const counts: Record<string, number> = {};
  for (const event of events) {
    if (event.reason !== "BrokerRefused" || event.regarding?.name !== machine) continue;
    const job = event.related?.name ?? "(no Job)";
    counts[job] = (counts[job] ?? 0) + (event.series?.count ?? 1);
  }
  return counts;
}
