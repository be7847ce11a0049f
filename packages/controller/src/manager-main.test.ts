import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { defaultJobEnvironment } from "./jobs/build-job.js";
import { parseManagerFlags, type ManagerSettings } from "./flags.js";
import { createManagerMetrics } from "./metrics/manager-metrics.js";
import { KubeClient } from "./runtime/kube-client.js";
import { Manager } from "./runtime/manager.js";
import {
  admissionServing,
  addManagerControllers,
  createManagerControllers,
  exitCodeOf,
  managerSharding,
  managerJobEnvironment,
  managerUsername,
  managerVersion,
  runManager,
  versionLine,
} from "./manager-main.js";
import { generateServingCertificate } from "./webhooks/certificates.test-support.js";

const image = "ghcr.io/captf-io/captf-controller:v0.1.0";

async function settings(argv: string[] = [], env: Record<string, string> = {}): Promise<ManagerSettings> {
  const parsed = await parseManagerFlags(argv, { CAPTF_MANAGER_IMAGE: image, ...env });
  if (parsed.kind !== "run") throw new Error(JSON.stringify(parsed));
  return parsed.options;
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { stdout: { write: (text: string) => out.push(text) }, stderr: { write: (text: string) => err.push(text) } },
    stdout: () => out.join(""),
    stderr: () => err.join(""),
  };
}

describe("runManager", () => {
  it("prints the help and exits 0", async () => {
    const { io, stdout } = capture();
    expect(await runManager(["--help"], {}, io)).toBe(0);
    expect(stdout()).toContain("--terraformmachine-concurrency");
  });

  it("prints the version, commit, contract and node, and exits 0", async () => {
    const { io, stdout } = capture();
    expect(await runManager(["--version"], {}, io)).toBe(0);
    expect(stdout()).toBe(`manager ${managerVersion} (commit unknown, contract v1alpha1, node ${process.version})\n`);
    expect(versionLine({ version: "1.2.3", commit: "abc", contract: "v1alpha1" })).toBe(
      `manager 1.2.3 (commit abc, contract v1alpha1, node ${process.version})\n`,
    );
  });

  it("exits 2 with the parser's one-line message for invalid flags", async () => {
    const { io, stdout, stderr } = capture();
    expect(await runManager(["--no-such-flag"], {}, io)).toBe(2);
    expect(stderr()).toBe("manager: invalid flags: unknown flag: --no-such-flag\n");
    expect(stdout()).toBe("");
  });

  it("exits 1 naming the cause when it cannot load its kubeconfig", async () => {
    const { io, stderr } = capture();
    expect(await runManager(["--kubeconfig=/nonexistent/kubeconfig"], { CAPTF_MANAGER_IMAGE: image }, io)).toBe(1);
    expect(stderr()).toMatch(/^manager: cannot start: .*\/nonexistent\/kubeconfig/);
  });

  it("has the version of package.json", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    expect(managerVersion).toBe(pkg.version);
  });
});

describe("the manager's parts", () => {
  it(
    "builds the three workspace controllers and the machine template controller with their concurrency flags, the identity " +
      "controller and the namespace sweep",
    async () => {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromOptions({
        clusters: [{ name: "c", server: "https://127.0.0.1:1" }],
        users: [{ name: "u" }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
      });
      const options = await settings([
        "--terraformcluster-concurrency=2",
        "--terraformmachine-concurrency=3",
        "--terraformmachinepool-concurrency=4",
        "--terraformmachinetemplate-concurrency=5",
      ]);
      const logger = pino({ level: "silent" });
      const client = new KubeClient(kubeConfig);
      const manager = new Manager({ client, logger });
      const controllers = createManagerControllers(
        { client, logger, metrics: createManagerMetrics({ processMetrics: false }), instance: "test", manager },
        options,
      );
      client.close();
      expect(controllers.map((controller) => [controller.name, controller.kind, controller.concurrency])).toEqual([
        ["terraformcluster", "TerraformCluster", 2],
        ["terraformmachine", "TerraformMachine", 3],
        ["terraformmachinepool", "TerraformMachinePool", 4],
        ["terraformclusteridentity", "TerraformClusterIdentity", 1],
        ["terraformmachinetemplate", "TerraformMachineTemplate", 5],
        ["namespace-sweep", "Namespace", 1],
      ]);
    },
  );

  it(
    "with --shards 3 scopes the sharded kinds' informers to the held shards by their label and watches the unassigned ones; " +
      "with --shards 1 nothing",
    async () => {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromOptions({
        clusters: [{ name: "c", server: "https://127.0.0.1:1" }],
        users: [{ name: "u" }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
      });
      const logger = pino({ level: "silent" });
      const client = new KubeClient(kubeConfig);
      const build = async (argv: string[]) => {
        const options = await settings(argv, { POD_NAMESPACE: "captf-system" });
        const manager = new Manager({ client, logger });
        const metrics = createManagerMetrics({ processMetrics: false });
        const sharding = managerSharding(options, { logger, metrics, client, manager });
        addManagerControllers(
          manager,
          createManagerControllers({ client, logger, metrics, instance: "test", manager }, options),
          sharding?.gate,
        );
        return { manager, metrics, sharding };
      };
      const sharded = await build(["--shards=3", "--leader-elect"]);
      const selectors = () => sharded.manager.scopedInformers().map((informer) => [informer.type.plural, informer.labelSelector]);
      expect(selectors()).toEqual([
        ["terraformclusters", false],
        ["terraformmachines", false],
        ["terraformmachinepools", false],
      ]);
      sharded.sharding!.onShardGained(2);
      sharded.sharding!.onShardGained(0);
      expect(selectors().map(([, selector]) => selector)).toEqual(new Array(3).fill("captf.io/shard in (0,2)"));
      sharded.sharding!.onShardLost(2);
      expect(selectors().map(([, selector]) => selector)).toEqual(new Array(3).fill("captf.io/shard in (0)"));
      // The objects no shard informer sees, per kind, whole.
      for (const type of sharded.manager.scopedInformers().map((informer) => informer.type)) {
        expect(sharded.manager.informer(type, { labelSelector: "captf.io/shard notin (0,1,2)", unscoped: true }).labelSelector).toBe(
          "captf.io/shard notin (0,1,2)",
        );
      }
      // Nothing cached yet: the gauge has no series.
      expect(await sharded.metrics.registry.metrics()).toContain("# TYPE captf_shard_cached_objects gauge\n\n");

      const single = await build([]);
      expect(single.sharding).toBeUndefined();
      expect(single.manager.scopedInformers()).toEqual([]);
      client.close();
    },
  );

  it("gives Jobs the runner image of the flags and the bundle copy and broker commands of the Job builder", async () => {
    expect(managerJobEnvironment(await settings(["--runner-image=registry.example/captf-controller:v9"]))).toEqual({
      runnerImage: "registry.example/captf-controller:v9",
      runnerCopyCommand: defaultJobEnvironment.runnerCopyCommand,
      brokerCommand: defaultJobEnvironment.brokerCommand,
    });
    expect(managerJobEnvironment(await settings()).runnerImage).toBe(image);
  });

  it("names the manager's user from POD_NAMESPACE and SERVICE_ACCOUNT_NAME, else the shipped ServiceAccount's", async () => {
    expect(managerUsername(await settings([], { POD_NAMESPACE: "ops", SERVICE_ACCOUNT_NAME: "captf" }))).toBe(
      "system:serviceaccount:ops:captf",
    );
    expect(managerUsername(await settings([], { POD_NAMESPACE: "ops" }))).toBe("system:serviceaccount:ops:captf-controller-manager");
    expect(managerUsername(await settings())).toBe("system:serviceaccount:captf-system:captf-controller-manager");
  });

  it("serves the webhooks with the certificate files and TLS flags", async () => {
    const dir = mkdtempSync(join(tmpdir(), "captf-manager-main-"));
    try {
      generateServingCertificate(dir);
      const options = await settings([
        `--webhook-cert-dir=${dir}/`,
        "--webhook-port=10443",
        "--tls-min-version=VersionTLS13",
        "--tls-curve-preferences=CurveP256,X25519",
      ]);
      expect(admissionServing(options)).toEqual({
        port: 10443,
        certFile: `${dir}/tls.crt`,
        keyFile: `${dir}/tls.key`,
        tls: { minVersion: "TLSv1.3", ecdhCurve: "P-256:X25519" },
      });
      await expect(async () => admissionServing(await settings(["--webhook-cert-dir=/nonexistent"]))).rejects.toThrow(
        /ENOENT.*\/nonexistent\/tls\.crt/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exits 0 after a graceful stop and 1 when the process must restart", () => {
    expect(exitCodeOf({ reason: "stopped", drained: true })).toBe(0);
    expect(exitCodeOf({ reason: "stopped", drained: false })).toBe(0);
    expect(exitCodeOf({ reason: "leadership-lost" })).toBe(1);
    expect(exitCodeOf({ reason: "cache-sync-timeout", unsynced: ["jobs.batch/v1"] })).toBe(1);
  });
});
