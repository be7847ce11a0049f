// captf installed as a user installs it: the captf-controller image and the no-op module images
// built here and pushed to a loopback registry, then `clusterctl init --infrastructure terraform`
// from captf's shipped clusterctl assets (e2e/src/clusterctl.ts; the same objects as
// config/install.yaml) with the image named through `${CAPTF_IMAGE}`, and the manager running as its
// Deployment under its own ServiceAccount on the chroot kubelet. Two things are stood in for the
// plane's missing pieces: cert-manager (a serving certificate Secret and the CA injected into the
// webhook configuration) and the Service network (the webhooks point at the Pod's port on
// loopback, as the chroot kubelet's Pods share the host's). When the test command measures child
// processes, the manager's Deployment also gets NODE_V8_COVERAGE (the chroot kubelet binds the
// coverage directory there) and the image's bundle its source map kept outside the image.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import {
  buildModuleImage,
  bundleSourceMapDirectory,
  childCoverageMeasured,
  freeLoopbackPort,
  generateServingCertificate,
  pushImage,
  requireTool,
  type LocalRegistry,
} from "@captf/testkit/plane";
import type { Role } from "@captf/contract";
import { loadManifest } from "./apply.js";
import { pointWebhooksAt } from "./cluster-api.js";
import { captfAssetsDirectory } from "./clusterctl.js";
import { buildAndPushHostileImage } from "./hostile-module.js";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const componentsFile = join(captfAssetsDirectory, "infrastructure-components.yaml");
const imageScript = join(repoRoot, "packages/controller/scripts/build-manager-image.mjs");

export const managerNamespace = "captf-system";
export const moduleTag = "v0.1.0-opentofu";
/** Where the manager's NODE_V8_COVERAGE points in its Pod when the test command measures it (the kubelet binds it). */
const managerCoveragePath = "/captf-coverage";

export interface CaptfImages {
  manager: string;
  modules: Record<Role, string>;
  /** The hostile machine module with OpenTofu (e2e/src/hostile-module.ts): the trust boundary's subject. */
  hostileMachine: string;
  /** The loopback registry's `host:port`, for images pushed later. */
  registry: string;
}

/** Builds the captf-controller image, the three no-op module images and the hostile machine image, and pushes them to `registry`. */
export function buildAndPushImages(registry: LocalRegistry, workDir: string, log: (line: string) => void): CaptfImages {
  const layout = join(workDir, "oci");
  const started = Date.now();
  // This machine's architecture only: the published two-architecture index is the image test's subject.
  const arch = process.arch === "arm64" ? "arm64" : "amd64";
  const sourceMaps = bundleSourceMapDirectory(`captf-controller-${process.pid}-${Date.now()}`);
  const mapArgs = sourceMaps ? ["--source-map-out", sourceMaps] : [];
  execFileSync(process.execPath, [imageScript, "--out", layout, "--tag", "e2e", "--arch", arch, ...mapArgs], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const manager = `${registry.host}/captf/captf-controller:e2e`;
  pushImage(layout, "e2e", manager);
  log(`images: captf-controller built and pushed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const tofu = requireTool("tofu");
  const runtimeVersion =
    /^OpenTofu v(\S+)/m.exec(execFileSync(tofu, ["version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }))?.[1] ?? "unknown";
  const modules = {} as Record<Role, string>;
  for (const role of ["cluster", "machine", "machinepool"] as const) {
    const tag = `${role}-${moduleTag}`;
    buildModuleImage(layout, tag, { moduleDir: noopModuleDirectory(role), runtime: tofu, runtimeVersion, role });
    modules[role] = `${registry.host}/captf/noop-${role}:${moduleTag}`;
    pushImage(layout, tag, modules[role]);
  }
  log(`images: no-op module images pushed to ${registry.host}`);
  const hostileMachine = buildAndPushHostileImage(registry.host, layout, "tofu");
  log(`images: hostile machine image pushed to ${registry.host}`);
  return { manager, modules, hostileMachine, registry: registry.host };
}

export interface CaptfInstall {
  /** The admission server's port on loopback. */
  webhookPort: number;
  healthPort: number;
  /** The manager's /metrics (HTTPS, authenticated and authorized by the API server) on loopback. */
  diagnosticsPort: number;
  /** The CA of the admission server's certificate. */
  webhookCaPem: string;
  /**
   * What this plane changes after `clusterctl init` (see the file's header): the certificate Secret, the Deployment's ports,
   * the webhooks' URLs.
   */
  objects: k8s.KubernetesObject[];
}

/** The objects of captf's components as this plane runs them (see the file's header). */
export async function installObjects(options: {
  managerImage: string;
  workDir: string;
  managerArgs?: readonly string[];
}): Promise<CaptfInstall> {
  const shipped = loadManifest(componentsFile, { CAPTF_IMAGE: options.managerImage });
  const certificate = shipped.find((object) => object.kind === "Certificate") as
    | (k8s.KubernetesObject & { spec: { dnsNames: string[]; secretName: string } })
    | undefined;
  if (!certificate) throw new Error(`${componentsFile} has no cert-manager Certificate`);
  const serving = generateServingCertificate(join(options.workDir, "captf-webhook-certs"), "127.0.0.1", certificate.spec.dnsNames);
  const webhookPort = await freeLoopbackPort();
  const healthPort = await freeLoopbackPort();
  const diagnosticsPort = await freeLoopbackPort();

  const objects: k8s.KubernetesObject[] = [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: certificate.spec.secretName, namespace: certificate.metadata!.namespace },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": readFileSync(serving.certFile).toString("base64"),
        "tls.key": readFileSync(serving.keyFile).toString("base64"),
        "ca.crt": Buffer.from(serving.caPem).toString("base64"),
      },
    } as k8s.KubernetesObject,
  ];
  for (const object of shipped) {
    if (object.kind === "Deployment")
      objects.push(withPorts(object as k8s.V1Deployment, { webhookPort, healthPort, diagnosticsPort }, options.managerArgs ?? []));
    if (object.kind === "ValidatingWebhookConfiguration" || object.kind === "MutatingWebhookConfiguration")
      objects.push(pointWebhooksAt(object, `https://127.0.0.1:${webhookPort}`, serving.caPem));
  }
  return { webhookPort, healthPort, diagnosticsPort, webhookCaPem: serving.caPem, objects };
}

/**
 * The shipped Deployment on free loopback ports (the chroot kubelet's Pods share the host's network), writing its
 * coverage when the test command measures it.
 */
function withPorts(
  deployment: k8s.V1Deployment,
  ports: { webhookPort: number; healthPort: number; diagnosticsPort: number },
  managerArgs: readonly string[],
): k8s.V1Deployment {
  const copy = structuredClone(deployment);
  const container = copy.spec!.template.spec!.containers.find((candidate) => candidate.name === "manager")!;
  // A repeated flag's last value wins.
  container.args = [
    ...(container.args ?? []),
    `--webhook-port=${ports.webhookPort}`,
    `--health-addr=127.0.0.1:${ports.healthPort}`,
    `--diagnostics-address=127.0.0.1:${ports.diagnosticsPort}`,
    ...managerArgs,
  ];
  if (childCoverageMeasured()) container.env = [...(container.env ?? []), { name: "NODE_V8_COVERAGE", value: managerCoveragePath }];
  return copy;
}

/**
 * The lines of each packages/controller/src file (by its path from there) that the manager Pods which have exited so far
 * ran, as the test command will count them (scripts/lib/child-coverage.mjs over pods/ and bundles/ only); undefined
 * when the test command does not measure child processes.
 */
export async function managerCoveredLines(): Promise<Map<string, number> | undefined> {
  const measured = process.env.CAPTF_CHILD_COVERAGE;
  if (!measured) return undefined;
  const { childCoverage } = (await import(pathToFileURL(join(repoRoot, "scripts/lib/child-coverage.mjs")).href)) as {
    childCoverage(
      dir: string,
      root: string,
    ): Promise<Record<string, { s: Record<string, number>; statementMap: Record<string, LineStart> }>>;
  };
  // The Pods' files alone: the directory's top level also holds what other suites' processes wrote.
  const view = mkdtempSync(join(tmpdir(), "captf-manager-coverage-"));
  try {
    for (const name of ["pods", "bundles"]) symlinkSync(join(measured, name), join(view, name));
    const covered = new Map<string, number>();
    for (const [file, coverage] of Object.entries(await childCoverage(view, repoRoot))) {
      const prefix = join(repoRoot, "packages/controller/src/");
      if (!file.startsWith(prefix)) continue;
      const lines = new Set(
        Object.entries(coverage.statementMap)
          .filter(([id]) => (coverage.s[id] ?? 0) > 0)
          .map(([, at]) => at.start.line),
      );
      covered.set(file.slice(prefix.length), lines.size);
    }
    return covered;
  } finally {
    rmSync(view, { recursive: true, force: true });
  }
}

interface LineStart {
  start: { line: number };
}
