import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import {
  logLevelForVerbosity,
  managerFlags,
  parseFeatureGates,
  parseGoDuration,
  parseManagerFlags,
  type ManagerSettings,
} from "./flags.js";

const env = { CAPTF_MANAGER_IMAGE: "ghcr.io/captf-io/manager:v0.1.0" };

async function parseOk(argv: string[], environment: Record<string, string | undefined> = env): Promise<ManagerSettings> {
  const parsed = await parseManagerFlags(argv, environment);
  if (parsed.kind !== "run") throw new Error(`expected options, got ${JSON.stringify(parsed)}`);
  return parsed.options;
}

async function parseErrors(argv: string[], environment: Record<string, string | undefined> = env): Promise<string[]> {
  const parsed = await parseManagerFlags(argv, environment);
  if (parsed.kind !== "invalid") throw new Error(`expected errors, got ${parsed.kind}`);
  expect(parsed.message).toBe(`manager: invalid flags: ${parsed.errors.join("; ")}`);
  return parsed.errors;
}

describe("parseGoDuration", () => {
  it.each([
    ["10m", 600_000],
    ["15s", 15_000],
    ["1h30m", 5_400_000],
    ["1.5s", 1_500],
    ["300ms", 300],
    ["0", 0],
    ["2h", 7_200_000],
    ["-1s", -1_000],
  ])("%s is %i ms", (text, millis) => {
    expect(parseGoDuration(text)).toBe(millis);
  });

  it.each(["", "10", "m", "1 m", "1d", "1h-5m"])("rejects %j", (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});

describe("the manager flags", () => {
  it("default exactly as the reference documents", async () => {
    expect(await parseOk([], { ...env, POD_NAMESPACE: "captf-system", SERVICE_ACCOUNT_NAME: "captf-controller-manager" })).toEqual({
      namespace: "",
      watchFilter: "",
      syncPeriodMillis: 600_000,
      shards: 1,
      concurrency: { terraformCluster: 10, terraformMachine: 10, terraformMachineTemplate: 10, terraformMachinePool: 10 },
      healthAddr: ":9440",
      profilerAddress: "",
      kubeconfig: "",
      leaderElection: { enabled: false, leaseDurationMillis: 15_000, renewDeadlineMillis: 10_000, retryPeriodMillis: 2_000 },
      webhook: { port: 9443, certDir: "/tmp/k8s-webhook-server/serving-certs/", certName: "tls.crt", keyName: "tls.key" },
      runnerImage: "ghcr.io/captf-io/manager:v0.1.0",
      runnerEvents: true,
      driftDefaultIntervalMillis: 1_800_000,
      clusterOperationGate: true,
      stateBackups: 5,
      tracing: { otlpEndpoint: "" },
      maxActiveJobs: 0,
      clusterMaxActiveJobs: 0,
      diagnostics: { address: ":8443", insecure: false, tlsCipherSuites: [], tlsCurvePreferences: [], tlsMinVersion: "TLSv1.2" },
      logging: { verbosity: 2, vmodule: "", format: "text", flushFrequencyMillis: 5_000, splitStream: false },
      featureGates: { AllAlpha: false, AllBeta: false, ContextualLogging: true, LoggingAlphaOptions: false, LoggingBetaOptions: true },
      podNamespace: "captf-system",
      managerUser: "system:serviceaccount:captf-system:captf-controller-manager",
    });
  });

  it("parse the shipped arguments and every form of value", async () => {
    const options = await parseOk([
      "--leader-elect",
      "--diagnostics-address=:8443",
      "--insecure-diagnostics=false",
      "--webhook-port=9443",
      "--namespace",
      "tenants",
      "--sync-period=1h30m",
      "--terraformmachine-concurrency=3",
      "--runner-events=false",
      "--runner-image=registry.local:5000/captf/manager@sha256:" + "a".repeat(64),
      "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
      "--tls-curve-preferences=X25519,CurveP256",
      "--tls-min-version=VersionTLS13",
      "-v=4",
      "--logging-format=json",
      "--log-json-split-stream",
      "--feature-gates=ContextualLogging=false,AllBeta=true",
    ]);
    expect(options).toMatchObject({
      namespace: "tenants",
      syncPeriodMillis: 5_400_000,
      concurrency: { terraformMachine: 3, terraformCluster: 10 },
      leaderElection: { enabled: true },
      runnerEvents: false,
      runnerImage: `registry.local:5000/captf/manager@sha256:${"a".repeat(64)}`,
      diagnostics: {
        address: ":8443",
        insecure: false,
        tlsCipherSuites: ["ECDHE-RSA-AES128-GCM-SHA256", "TLS_AES_256_GCM_SHA384"],
        tlsCurvePreferences: ["X25519", "P-256"],
        tlsMinVersion: "TLSv1.3",
      },
      logging: { verbosity: 4, format: "json", splitStream: true },
      featureGates: { ContextualLogging: false, AllBeta: true },
    });
  });

  it("take the last of a repeated flag, like Go's flag package", async () => {
    expect((await parseOk(["--namespace=a", "--namespace=b"])).namespace).toBe("b");
  });

  it("accept controller-runtime's names for the probe and metrics addresses", async () => {
    const options = await parseOk(["--health-probe-bind-address=:8081", "--metrics-bind-address=0"]);
    expect(options.healthAddr).toBe(":8081");
    expect(options.diagnostics.address).toBe("0");
  });

  it("aggregate every validation error", async () => {
    const errors = await parseErrors(
      [
        "--sync-period=0",
        "--shards=0",
        "--terraformcluster-concurrency=0",
        "--terraformmachinepool-concurrency=two",
        "--state-backups=-1",
        "--drift-default-interval=soon",
        "--leader-elect-lease-duration=5s",
        "--health-addr=9440",
        "--tls-min-version=VersionTLS10",
        "--logging-format=xml",
        "--feature-gates=Bogus=true",
        "--tls-cipher-suites=TLS_RSA_WITH_RC4_128_SHA",
      ],
      {},
    );
    expect(errors).toEqual([
      "--runner-image: required (or set $CAPTF_MANAGER_IMAGE)",
      "--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline",
      '--tls-min-version: unsupported "VersionTLS10": want VersionTLS12 or VersionTLS13',
      '--logging-format: unsupported "xml": want text or json',
      '--health-addr: invalid address "9440": want host:port, e.g. ":9440"',
      expect.stringMatching(/^--tls-cipher-suites: unsupported "TLS_RSA_WITH_RC4_128_SHA": want one of TLS_AES_128_GCM_SHA256, /),
      "--feature-gates: unrecognized feature gate: Bogus",
      "--sync-period: must be > 0, got 0",
      "--shards: must be >= 1, got 0",
      "--terraformcluster-concurrency: must be >= 1, got 0",
      '--terraformmachinepool-concurrency: invalid value "two": want an integer',
      '--drift-default-interval: invalid duration "soon": want e.g. 30s, 10m or 1h30m',
      "--state-backups: must be >= 0, got -1",
    ]);
  });

  it("reject an unparsable runner image and unknown flags", async () => {
    expect(await parseErrors(["--runner-image=Not A Ref"])).toEqual([
      expect.stringMatching(/^--runner-image: invalid reference "Not A Ref": /),
    ]);
    expect((await parseErrors(["--bogus=1"]))[0]).toMatch(/bogus/);
  });

  it("print help with every flag and its default", async () => {
    const parsed = await parseManagerFlags(["--help"], env);
    expect(parsed.kind).toBe("help");
    const text = parsed.kind === "help" ? parsed.text : "";
    for (const flag of managerFlags) expect(text).toContain(`--${flag.name}`);
    expect(text).toContain('[default: ":9440"]');
    expect(text).not.toContain("metrics-bind-address");
    expect((await parseManagerFlags(["-h"], env)).kind).toBe("help");
    expect((await parseManagerFlags(["--version"], env)).kind).toBe("version");
  });

  it("list every flag's effective value for the startup log", async () => {
    const parsed = await parseManagerFlags(["--namespace=x"], env);
    if (parsed.kind !== "run") throw new Error(parsed.kind);
    expect(parsed.flagLines).toHaveLength(managerFlags.length);
    expect(parsed.flagLines).toContain('FLAG: --namespace="x"');
    expect(parsed.flagLines).toContain('FLAG: --runner-image="ghcr.io/captf-io/manager:v0.1.0"');
    expect(parsed.flagLines).toContain('FLAG: --leader-elect="false"');
  });

  it("map verbosity onto log levels", () => {
    expect([0, 2, 3, 4, 5, 9].map(logLevelForVerbosity)).toEqual(["info", "info", "debug", "debug", "trace", "trace"]);
  });

  it("know the logging feature gates", () => {
    expect(parseFeatureGates("LoggingAlphaOptions=true").gates.LoggingAlphaOptions).toBe(true);
    expect(parseFeatureGates("AllAlpha=maybe").errors).toEqual([
      "--feature-gates: invalid value of AllAlpha: maybe, err: want true or false",
    ]);
  });

  it("are all documented in docs/manager-flags.md with their defaults", () => {
    const doc = readFileSync(new URL("../../../docs/manager-flags.md", import.meta.url), "utf8");
    for (const flag of managerFlags) {
      const row = doc.split("\n").find((line) => line.startsWith(`| \`--${flag.name}\``));
      expect(row).toBeDefined();
      expect(row).toContain(`\`${typeof flag.default === "string" ? JSON.stringify(flag.default) : String(flag.default)}\``);
    }
  });
});
