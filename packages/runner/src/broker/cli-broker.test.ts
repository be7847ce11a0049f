import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { main, type CliIo } from "../cli.js";
import type { RunResult } from "@captf/contract/run-result";

// `runner broker` and `runner run --broker` as a Job's containers start them.
const dir = mkdtempSync(join(tmpdir(), "runner-broker-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const object = "infrastructure.cluster.x-k8s.io/v1alpha1/TerraformMachine/team-a/m-1/u-1";

async function cli(argv: string[], io: Partial<CliIo> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { PATH: "/usr/bin:/bin" },
    ...io,
  });
  return { code, stdout, stderr };
}

describe("runner broker", () => {
  it("documents its flags, what it allows and how it stops", async () => {
    const { code, stdout } = await cli(["broker", "--help"]);
    expect(code).toBe(0);
    for (const flag of ["--event-object", "--state-suffix", "--job-name", "--dir", "--result", "--log-requests"])
      expect(stdout).toContain(`  ${flag} `);
    expect(stdout).toContain("ALLOWED");
    expect(stdout).toContain("SIGNALS");
  });

  it("refuses to start without its object or state suffix", async () => {
    expect((await cli(["broker", "--state-suffix=abc-m"])).code).toBe(2);
    expect((await cli(["broker", `--event-object=${object}`])).code).toBe(2);
    const bad = await cli(["broker", "--event-object=nonsense", "--state-suffix=abc-m"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--event-object "nonsense" must be/);
  });

  it("serves until stopped, then writes its summary", async () => {
    const serviceAccount = join(dir, "sa");
    mkdirSync(serviceAccount, { recursive: true });
    writeFileSync(join(serviceAccount, "token"), "job-token");
    const brokerDir = join(dir, "broker");
    const result = join(dir, "summary.json");
    const stop = new AbortController();
    const running = cli(
      [
        "broker",
        `--event-object=${object}`,
        "--state-suffix=abc-m",
        `--dir=${brokerDir}`,
        `--result=${result}`,
        "--server=http://127.0.0.1:9",
        `--service-account-dir=${serviceAccount}`,
      ],
      { signal: stop.signal },
    );
    while (!existsSync(join(brokerDir, "kubeconfig"))) await new Promise((resolve) => setTimeout(resolve, 5));
    const kubeconfig = JSON.parse(readFileSync(join(brokerDir, "kubeconfig"), "utf8")) as { clusters: { cluster: { server: string } }[] };
    const server = kubeconfig.clusters[0]!.cluster.server;
    // The run's own token, never the Job's, as the server's path.
    expect(server).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{64}$/);
    expect(JSON.stringify(kubeconfig)).not.toContain("job-token");
    expect((await fetch(`${server.replace(/\/[0-9a-f]{64}$/, "")}/api/v1/namespaces/team-a/secrets/demo-kubeconfig`)).status).toBe(401);
    stop.abort();
    const { code, stderr } = await running;
    expect(code).toBe(0);
    expect(JSON.parse(readFileSync(result, "utf8"))).toMatchObject({ requests: 1, allowed: 0, refused: 1, refusedByTarget: { other: 1 } });
    expect(stderr).toContain('"msg":"serving"');
    expect(stderr).toContain('"msg":"request refused"');
    expect(stderr).not.toContain("job-token");
  });
});

describe("runner run --broker", () => {
  it("fails in prepare, with a result, when the broker never writes its kubeconfig", async () => {
    const stop = new AbortController();
    const result = join(dir, "run-result.json");
    setTimeout(() => stop.abort(), 50);
    // A module and a runtime that pass preflight and prepare: the wait comes right before the first step.
    mkdirSync(join(dir, "module"), { recursive: true });
    writeFileSync(join(dir, "module", "main.tf"), "");
    mkdirSync(join(dir, "config"), { recursive: true });
    const { code } = await cli(
      [
        "run",
        "--op=apply",
        "--bin=/bin/true",
        `--module=${join(dir, "module")}`,
        `--config=${join(dir, "config")}`,
        `--broker=${join(dir, "no-broker")}`,
        `--result=${result}`,
        `--workdir=${join(dir, "work")}`,
      ],
      { signal: stop.signal },
    );
    expect(code).toBe(1);
    expect((JSON.parse(readFileSync(result, "utf8")) as RunResult).error).toMatchObject({
      kind: "step",
      step: "prepare",
      summary: "stopped while waiting for the state broker",
    });
  });
});
