// Runs the Jobs the manager creates, for tests: there is no kubelet on the test plane, so this
// plays its part for captf's Jobs. For each Pod kube-controller-manager created, it starts the
// state broker with the sidecar's own arguments (the plane's admin token standing in for the Job's)
// and the runner (the esbuild bundle of packages/runner, as child processes) with the Job's own
// arguments, the module the image names and the per-run Secret's files, then writes the Pod's
// status (phase, exit code, both termination messages) so the Job controller completes the Job.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as k8s from "@kubernetes/client-node";
import { bundleCoverageFlags, childCoverageEnvironment, requireTool, type RuntimeName } from "@captf/testkit";
import { brokerContainerName, brokerDir, defaultJobEnvironment, runnerRunCommand } from "../jobs/build-job.js";

export interface JobExecutor {
  /** Runs every pending Pod of the namespace once; returns how many it ran. */
  runPending(): Promise<number>;
  /** What each Pod's runner wrote to stdout and stderr (its container log), by Pod name. */
  logs: Map<string, string>;
  /** The runner bundle the Pods run (built from the sources, --js-only). */
  bundle: string;
  close(): void;
}

export interface JobExecutorOptions {
  kubeconfigPath: string;
  namespace: string;
  /** The module directory of each image reference. */
  modules: Record<string, string>;
  /** The runtime at /captf/runtime of each image reference not OpenTofu's (by repository, as modules). */
  runtimes?: Record<string, RuntimeName>;
  /** What the Pod reports instead of its runner's result (its termination message), e.g. a result as another runner would write it. */
  rewriteResult?: (pod: k8s.V1Pod, message: string) => string;
  /**
   * Images no registry serves, with the reason the kubelet waits on (`ErrImagePull`, `ImagePullBackOff`) and its message: their Pods
   * stay Pending and never run.
   */
  unpullable?: ReadonlyMap<string, { reason: string; message: string }>;
}

export function startJobExecutor(options: JobExecutorOptions): JobExecutor {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(options.kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const base = mkdtempSync(join(tmpdir(), "captf-executor-"));
  const bundle = join(base, "bundle");
  execFileSync(
    process.execPath,
    [
      fileURLToPath(new URL("../../../runner/scripts/build-bundle.mjs", import.meta.url)),
      "--js-only",
      "--out",
      bundle,
      ...bundleCoverageFlags(),
    ],
    { stdio: "pipe" },
  );
  const tofu = requireTool("tofu");
  // What the broker sidecar reads from the Pod's projected token volume.
  const serviceAccountDir = join(base, "service-account");
  mkdirSync(serviceAccountDir);
  const cluster = kc.getCurrentCluster()!;
  writeFileSync(join(serviceAccountDir, "token"), kc.getCurrentUser()!.token!);
  writeFileSync(join(serviceAccountDir, "ca.crt"), cluster.caData ? Buffer.from(cluster.caData, "base64") : readFileSync(cluster.caFile!));
  const done = new Set<string>();
  const logs = new Map<string, string>();

  async function runPod(pod: k8s.V1Pod): Promise<boolean> {
    const name = pod.metadata!.name!;
    const container = pod.spec!.containers.find((c) => c.name === "source")!;
    const pullError = options.unpullable?.get(container.image!);
    if (pullError) {
      await reportPullError(pod, container.image!, pullError.reason, pullError.message);
      return false;
    }
    // A pinned image runs by digest: its module is the one of the same repository.
    const repository = (reference: string) => reference.replace(/@sha256:[0-9a-f]{64}$/, "").replace(/:[\w][\w.-]*$/, "");
    const byImage = <T>(table: Record<string, T>): T | undefined =>
      table[container.image!] ?? Object.entries(table).find(([reference]) => repository(reference) === repository(container.image!))?.[1];
    const moduleDir = byImage(options.modules);
    if (!moduleDir) throw new Error(`no module for image ${container.image}`);
    const runtimeName = byImage(options.runtimes ?? {});
    const runtime = runtimeName ? requireTool(runtimeName) : tofu;
    // Like a kubelet: the container's Secret key references (TF_ENCRYPTION), a pod whose Secret is missing waiting for it.
    const secretEnv: Record<string, string> = {};
    for (const entry of container.env ?? []) {
      const ref = entry.valueFrom?.secretKeyRef;
      if (!ref) continue;
      const secret = await core.readNamespacedSecret({ name: ref.name!, namespace: options.namespace }).catch(() => undefined);
      const value = secret?.data?.[ref.key];
      if (value === undefined) {
        done.delete(pod.metadata!.uid!);
        return false;
      }
      secretEnv[entry.name] = Buffer.from(value, "base64").toString("utf8");
    }
    // The trace context and OTLP settings (docs/tracing.md) as the container has them; its other values name paths of a real Pod.
    for (const entry of container.env ?? [])
      if (entry.value !== undefined && (entry.name === "TRACEPARENT" || entry.name.startsWith("OTEL_")))
        secretEnv[entry.name] = entry.value;
    const work = join(base, name);
    const config = join(work, "config");
    mkdirSync(config, { recursive: true });
    // The generated root calls ../../module from <workdir>/root, as /captf/work/root reaches /captf/module.
    symlinkSync(moduleDir, join(work, "module"));
    const configVolume = pod.spec!.volumes!.find((v) => v.name === "config")!;
    // A Secret volume, or (restore) a projection of the run Secret and the backup chunks.
    const sources = configVolume.projected
      ? configVolume.projected.sources!.map((source) => ({ name: source.secret!.name!, items: source.secret!.items }))
      : [{ name: configVolume.secret!.secretName!, items: undefined }];
    for (const source of sources) {
      const secret = await core.readNamespacedSecret({ name: source.name, namespace: options.namespace }).catch(() => undefined);
      // Like a kubelet, a pod whose Secret volume is missing waits for it.
      if (!secret) {
        done.delete(pod.metadata!.uid!);
        rmSync(work, { recursive: true, force: true });
        return false;
      }
      const files = source.items
        ? source.items.map((item) => [item.path, secret.data?.[item.key] ?? ""] as const)
        : Object.entries(secret.data ?? {});
      for (const [file, value] of files) {
        mkdirSync(dirname(join(config, file)), { recursive: true });
        writeFileSync(join(config, file), Buffer.from(value, "base64"));
      }
    }
    const resultPath = join(work, "result.json");
    const brokerResult = join(work, "broker-result.json");
    const brokerWork = join(work, "broker");
    const sidecar = pod.spec!.initContainers!.find((c) => c.name === brokerContainerName)!;
    const { brokerCommand } = defaultJobEnvironment;
    const broker = spawn(
      process.execPath,
      [
        ...brokerCommand.slice(1, -1),
        join(bundle, basename(brokerCommand.at(-1)!)),
        ...(sidecar.args ?? []).map((arg) => (arg.startsWith("--dir=") ? `--dir=${brokerWork}` : arg)),
        `--result=${brokerResult}`,
        `--server=${cluster.server}`,
        `--service-account-dir=${serviceAccountDir}`,
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env.PATH ?? "", POD_NAME: name, ...childCoverageEnvironment() } },
    );
    broker.stderr.on("data", (chunk: Buffer) =>
      logs.set(`${name}/${brokerContainerName}`, (logs.get(`${name}/${brokerContainerName}`) ?? "") + chunk.toString("utf8")),
    );
    const args = (container.args ?? []).map((arg) =>
      arg.startsWith("--broker=") || arg.startsWith(`--backend-config=config_path=${brokerDir}/`)
        ? arg.replace(brokerDir, brokerWork)
        : arg.startsWith("--bin=")
          ? `--bin=${runtime}`
          : arg.startsWith("--module=")
            ? `--module=${moduleDir}`
            : arg.startsWith("--workdir=")
              ? `--workdir=${join(work, "work")}`
              : arg.startsWith("--config=")
                ? `--config=${config}`
                : arg.startsWith("--providers=")
                  ? `--providers=${join(work, "no-providers")}`
                  : arg.startsWith("--result=")
                    ? `--result=${resultPath}`
                    : arg,
    );
    const exitCode = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, [join(bundle, basename(runnerRunCommand[1]!)), ...runnerRunCommand.slice(2), ...args], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { PATH: process.env.PATH ?? "", TF_IN_AUTOMATION: "1", TF_INPUT: "0", ...secretEnv, ...childCoverageEnvironment() },
      });
      // On exit, not close: a runtime process the runner left behind may hold the pipes open.
      const append = (chunk: Buffer) => logs.set(name, (logs.get(name) ?? "") + chunk.toString("utf8"));
      child.stdout.on("data", append);
      child.stderr.on("data", append);
      child.on("exit", (code) => resolve(code ?? 1));
    });
    // The main container has ended: the kubelet stops the sidecar, which writes its summary.
    const brokerExit = await new Promise<number>((resolve) => {
      if (broker.exitCode !== null) resolve(broker.exitCode);
      broker.once("exit", (code) => resolve(code ?? 1));
      broker.kill("SIGTERM");
    });
    let brokerMessage = "";
    try {
      brokerMessage = readFileSync(brokerResult, "utf8");
    } catch {
      // The broker died before writing its summary: the manager reads none.
    }
    let message = "";
    try {
      message = readFileSync(resultPath, "utf8");
    } catch {
      // The runner died before writing its result: the manager must cope with an empty message.
    }
    if (options.rewriteResult) message = options.rewriteResult(pod, message);
    const now = new Date().toISOString();
    await core.patchNamespacedPodStatus(
      {
        name,
        namespace: options.namespace,
        body: {
          status: {
            phase: exitCode === 0 ? "Succeeded" : "Failed",
            initContainerStatuses: [
              {
                name: brokerContainerName,
                image: sidecar.image!,
                imageID: `${sidecar.image}@sha256:${"0".repeat(64)}`,
                ready: false,
                started: false,
                restartCount: 0,
                state: {
                  terminated: {
                    exitCode: brokerExit,
                    reason: brokerExit === 0 ? "Completed" : "Error",
                    message: brokerMessage,
                    startedAt: now as never,
                    finishedAt: now as never,
                  },
                },
              },
            ],
            containerStatuses: [
              {
                name: "source",
                image: container.image!,
                imageID: `${container.image}@sha256:${"0".repeat(64)}`,
                ready: false,
                restartCount: 0,
                state: {
                  terminated: {
                    exitCode,
                    reason: exitCode === 0 ? "Completed" : "Error",
                    message,
                    startedAt: now as never,
                    finishedAt: now as never,
                  },
                },
              },
            ],
          },
        },
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    return true;
  }

  /** What a kubelet reports of a Pod whose module image it cannot pull: Pending since now, the container waiting on the pull. */
  async function reportPullError(pod: k8s.V1Pod, image: string, reason: string, message: string): Promise<void> {
    await core.patchNamespacedPodStatus(
      {
        name: pod.metadata!.name!,
        namespace: options.namespace,
        body: {
          status: {
            phase: "Pending",
            startTime: new Date().toISOString() as never,
            containerStatuses: [
              {
                name: "source",
                image,
                imageID: "",
                ready: false,
                restartCount: 0,
                state: { waiting: { reason, message } },
              },
            ],
          },
        },
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
  }

  return {
    logs,
    bundle,
    async runPending() {
      const pods = await core.listNamespacedPod({ namespace: options.namespace });
      let ran = 0;
      for (const pod of pods.items) {
        if (done.has(pod.metadata!.uid!) || pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") continue;
        done.add(pod.metadata!.uid!);
        if (await runPod(pod)) ran++;
      }
      return ran;
    },
    close() {
      rmSync(base, { recursive: true, force: true });
    },
  };
}
