// Cluster API's own core manager on the management plane: its CRDs and webhook configurations from
// the same module release the tools built it from, served on loopback with a throwaway certificate
// (Cluster API's webhooks cannot be switched off; they default and validate every object).
import { spawn } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import { connect } from "node:tls";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import {
  clusterApiModuleDirectory,
  clusterApiVersion,
  freeLoopbackPort,
  generateServingCertificate,
  requireTool,
  waitFor,
} from "@captf/testkit/plane";
import { applyObjects, type Applier } from "./apply.js";

/** Every core CRD of the release: clusters, machines, their sets, deployments, pools, health checks, classes. */
const coreCrdDirectory = "core/config/crd/bases";
const webhookManifests = "core/config/webhook/manifests.yaml";

export interface ClusterApiManager {
  readonly logFile: string;
  stop(): Promise<void>;
}

/**
 * Starts Cluster API's core manager against the plane's admin kubeconfig and installs its webhooks; its CRDs are
 * `clusterctl init`'s (e2e/src/clusterctl.ts).
 */
export async function startClusterApi(options: {
  kubeconfigPath: string;
  workDir: string;
  applier: Applier;
  log: (line: string) => void;
}): Promise<ClusterApiManager> {
  const { kubeconfigPath, workDir, applier, log } = options;
  const moduleDir = clusterApiModuleDirectory();
  const crds = readdirYaml(join(moduleDir, coreCrdDirectory));
  await waitForCrdsEstablished(applier, crds);
  log(`cluster-api: ${crds.length} CRDs established`);

  const webhookPort = await freeLoopbackPort();
  const certificate = generateServingCertificate(join(workDir, "capi-webhook-certs"));
  const child = spawn(
    requireTool("capi-manager"),
    [
      `--kubeconfig=${kubeconfigPath}`,
      "--leader-elect=false",
      `--webhook-port=${webhookPort}`,
      `--webhook-cert-dir=${join(workDir, "capi-webhook-certs")}`,
      `--health-addr=127.0.0.1:${await freeLoopbackPort()}`,
      `--diagnostics-address=127.0.0.1:${await freeLoopbackPort()}`,
      "--insecure-diagnostics",
      // Faster than the defaults, so a demo converges in seconds rather than a minute.
      "--remote-connection-grace-period=20s",
      "--sync-period=60s",
      // ClusterClass objects are refused without it (the clusterclass flavor, e2e/src/clusterctl-scenarios.test-support.ts).
      "--feature-gates=ClusterTopology=true",
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KUBECONFIG: kubeconfigPath } },
  );
  const logFile = join(workDir, "capi-manager.log");
  const sink = createWriteStream(logFile);
  child.stdout!.pipe(sink);
  child.stderr!.pipe(sink);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  // Cluster API's webhook configurations name its Service; on this plane they point at the loopback port.
  const webhooks = (k8s.loadAllYaml(readFileSync(join(moduleDir, webhookManifests), "utf8")) as k8s.KubernetesObject[]).map(
    (configuration) => pointWebhooksAt(configuration, `https://127.0.0.1:${webhookPort}`, certificate.caPem),
  );
  await waitFor(
    async () =>
      (await probeTls(webhookPort))
        ? true
        : child.exitCode !== null
          ? Promise.reject(new Error(`the Cluster API manager exited (${child.exitCode}); see ${logFile}`))
          : undefined,
    120_000,
    `the Cluster API webhook server on 127.0.0.1:${webhookPort} (log: ${logFile})`,
  );
  await applyObjects(applier, webhooks);
  log(`cluster-api: core manager ${clusterApiVersion} serving webhooks on 127.0.0.1:${webhookPort}`);

  return {
    logFile,
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      // Without its server the plane's writes would fail on the webhooks: remove them.
      for (const configuration of webhooks) await applier.delete(configuration).catch(() => undefined);
    },
  };
}

/** The configuration with every webhook's Service reference replaced by `base` + its path, trusting `caPem`. */
export function pointWebhooksAt(configuration: k8s.KubernetesObject, base: string, caPem: string): k8s.KubernetesObject {
  const copy = structuredClone(configuration) as k8s.KubernetesObject & {
    webhooks?: { clientConfig: { service?: { path?: string }; url?: string; caBundle?: string } }[];
  };
  for (const webhook of copy.webhooks ?? []) {
    const path = webhook.clientConfig.service?.path ?? "/";
    webhook.clientConfig = { url: `${base}${path}`, caBundle: Buffer.from(caPem).toString("base64") };
  }
  return copy;
}

function readdirYaml(dir: string): k8s.KubernetesObject[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".yaml"))
    .sort()
    .flatMap((name) => k8s.loadAllYaml(readFileSync(join(dir, name), "utf8")) as k8s.KubernetesObject[]);
}

async function waitForCrdsEstablished(applier: Applier, crds: readonly k8s.KubernetesObject[]): Promise<void> {
  for (const crd of crds) {
    await waitFor(
      async () => {
        const current = (await applier.read(crd).catch(() => undefined)) as
          | { status?: { conditions?: { type: string; status: string }[] } }
          | undefined;
        return current?.status?.conditions?.some((condition) => condition.type === "Established" && condition.status === "True")
          ? true
          : undefined;
      },
      60_000,
      `CRD ${crd.metadata!.name} established`,
    );
  }
}

/** True once something completes a TLS handshake on the loopback port. */
function probeTls(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
      socket.end();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
