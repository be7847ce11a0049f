// From flags to a running manager on the real API server.
import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { describeWithTools, sharedControlPlane } from "@captf/testkit";
import { parseManagerFlags } from "./flags.js";
import { bootstrapManager } from "./bootstrap.js";
import { builtinTypes } from "./runtime/builtin-types.js";
import type { Lease } from "./runtime/leader-election.js";
import { createTestNamespace, eventually, FaultyKubeClient } from "./runtime/runtime.test-support.js";

jest.setTimeout(30_000);

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "bootstrapping the manager from its flags", () => {
  let client: FaultyKubeClient;
  let namespace: string;

  beforeAll(async () => {
    client = new FaultyKubeClient();
    namespace = await createTestNamespace(client, "bootstrap");
  });

  afterAll(async () => {
    await client.delete(builtinTypes.namespace, undefined, namespace).catch(() => undefined);
    client.close();
  });

  const parse = async (extra: string[]) => {
    const parsed = await parseManagerFlags(
      [
        `--kubeconfig=${sharedControlPlane().kubeconfigPath}`,
        "--health-addr=127.0.0.1:0",
        "--diagnostics-address=127.0.0.1:0",
        "--logging-format=json",
        ...extra,
      ],
      { CAPTF_MANAGER_IMAGE: "ghcr.io/captf-io/manager:test", POD_NAMESPACE: namespace },
    );
    if (parsed.kind !== "run") throw new Error(JSON.stringify(parsed));
    return parsed;
  };

  it(
    "runs with leader election in POD_NAMESPACE, logs its flags as JSON, serves probes and metrics, and releases the Lease on " + "stop",
    async () => {
      const { options, flagLines } = await parse(["--leader-elect", "--insecure-diagnostics", "--leader-elect-retry-period=200ms"]);
      const lines: string[] = [];
      const { manager, client: managerClient } = bootstrapManager(options, {
        buildInfo: { version: "v0.1.0", commit: "abc", contract: "v1alpha1" },
        flagLines,
        stdout: { write: (text: string) => lines.push(text) },
      });
      const stop = new AbortController();
      const run = manager.run(stop.signal);
      try {
        await eventually(() => manager.isLeader(), 10_000, "leadership");
        const ready = await fetch(`http://127.0.0.1:${manager.ports.health}/readyz`);
        expect(ready.status).toBe(200);
        const metrics = await (await fetch(`http://127.0.0.1:${manager.ports.metrics}/metrics`)).text();
        expect(metrics).toContain('captf_build_info{version="v0.1.0",commit="abc",contract="v1alpha1"} 1');
        expect(metrics).toContain('leader_election_master_status{name="controller-leader-election-captf"} 1');
        expect(metrics).toContain("process_cpu_seconds_total");
        const messages = lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
        expect(messages).toContain('FLAG: --leader-elect="true"');
        expect(messages).toContain("started leading");
      } finally {
        stop.abort();
        expect(await run).toEqual({ reason: "stopped", drained: true });
        managerClient.close();
      }
      const lease = await client.get<Lease>(builtinTypes.lease, namespace, "controller-leader-election-captf");
      expect(lease.spec?.holderIdentity).toBe("");
    },
  );

  it("fails at start when secure diagnostics have no certificate", async () => {
    const { options } = await parse(["--webhook-cert-dir=/nonexistent/certs"]);
    const { manager, client: managerClient } = bootstrapManager(options, {
      buildInfo: { version: "v", commit: "c", contract: "v1alpha1" },
      stdout: { write: () => undefined },
    });
    await expect(manager.run(new AbortController().signal)).rejects.toThrow(/ENOENT.*\/nonexistent\/certs\/tls\.crt/);
    managerClient.close();
  });
});
