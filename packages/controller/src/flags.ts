/**
 * The manager's command line: every flag of the reference (names and defaults exactly), parsed
 * with yargs into one typed {@link ManagerSettings} object, with validation errors aggregated as
 * `manager: invalid flags: …`. The table {@link managerFlags} is the single source: help text,
 * the `FLAG: --name="value"` startup lines and docs/manager-flags.md (checked by a test) follow it.
 */
import yargs from "yargs";
import { imageReferenceProblem } from "@captf/contract/oci";

export type FlagType = "string" | "boolean" | "int" | "duration" | "list";

export interface FlagDefinition {
  name: string;
  type: FlagType;
  /** As the reference documents it; durations in Go syntax. */
  default: string | number | boolean;
  description: string;
  group: "Manager" | "Controllers" | "Leader election" | "Webhooks" | "Jobs" | "Diagnostics" | "Logging";
  /** Other accepted spellings (controller-runtime's names), hidden from the help. */
  aliases?: readonly string[];
}

/** Every flag, in the order of the reference's table. */
export const managerFlags: readonly FlagDefinition[] = [
  {
    name: "namespace",
    type: "string",
    default: "",
    description: "Namespace the caches watch; empty watches all (identities are always cluster-wide)",
    group: "Manager",
  },
  {
    name: "watch-filter",
    type: "string",
    default: "",
    description: "Only reconcile objects whose cluster.x-k8s.io/watch-filter label has this value; empty reconciles all",
    group: "Manager",
  },
  {
    name: "shards",
    type: "int",
    default: 1,
    description:
      "Split the clusters into this many shards, claimed by the replicas through the Leases captf-shard-<i> (timings of " +
      "--leader-elect-*); 1 runs every controller on the leader alone (>= 1, see docs/scaling.md)",
    group: "Manager",
  },
  {
    name: "sync-period",
    type: "duration",
    default: "10m",
    description:
      "Informer resync (every cached object passed to its controllers again, from the cache: no list), and the interval of the " +
      "namespace sweep (plus up to 10% jitter); must be > 0",
    group: "Manager",
  },
  {
    name: "terraformcluster-concurrency",
    type: "int",
    default: 10,
    description: "TerraformClusters reconciled at once (>= 1)",
    group: "Controllers",
  },
  {
    name: "terraformmachine-concurrency",
    type: "int",
    default: 10,
    description: "TerraformMachines reconciled at once (>= 1)",
    group: "Controllers",
  },
  {
    name: "terraformmachinetemplate-concurrency",
    type: "int",
    default: 10,
    description: "TerraformMachineTemplates reconciled at once (>= 1)",
    group: "Controllers",
  },
  {
    name: "terraformmachinepool-concurrency",
    type: "int",
    default: 10,
    description: "TerraformMachinePools reconciled at once (>= 1)",
    group: "Controllers",
  },
  {
    name: "health-addr",
    type: "string",
    default: ":9440",
    description: 'Address of /healthz and /readyz; "0" disables',
    group: "Manager",
    aliases: ["health-probe-bind-address"],
  },
  {
    name: "profiler-address",
    type: "string",
    default: "",
    description: "Address of the profiler (Node inspector); empty disables",
    group: "Diagnostics",
  },
  {
    name: "tracing-otlp-endpoint",
    type: "string",
    default: "",
    description:
      "OTLP/HTTP base URL (http://collector:4318) the manager and its Jobs send traces to; " +
      "empty: traces only when OTEL_TRACES_EXPORTER=otlp (docs/tracing.md)",
    group: "Diagnostics",
  },
  {
    name: "kubeconfig",
    type: "string",
    default: "",
    description: "Path to a kubeconfig; empty uses $KUBECONFIG or the in-cluster config",
    group: "Manager",
  },
  {
    name: "leader-elect",
    type: "boolean",
    default: false,
    description: "Elect a leader on the Lease controller-leader-election-captf before reconciling (the shipped manifest sets it)",
    group: "Leader election",
  },
  {
    name: "leader-elect-lease-duration",
    type: "duration",
    default: "15s",
    description: "How long standbys wait before taking over a lease that was not renewed",
    group: "Leader election",
  },
  {
    name: "leader-elect-renew-deadline",
    type: "duration",
    default: "10s",
    description: "How long the leader retries renewing before it gives up leading",
    group: "Leader election",
  },
  {
    name: "leader-elect-retry-period",
    type: "duration",
    default: "2s",
    description: "How often candidates try to acquire or renew the lease",
    group: "Leader election",
  },
  { name: "webhook-port", type: "int", default: 9443, description: "Port of the validating webhook server", group: "Webhooks" },
  {
    name: "webhook-cert-dir",
    type: "string",
    default: "/tmp/k8s-webhook-server/serving-certs/",
    description: "Directory of the webhook serving certificate",
    group: "Webhooks",
  },
  {
    name: "webhook-cert-name",
    type: "string",
    default: "tls.crt",
    description: "Certificate file name in --webhook-cert-dir",
    group: "Webhooks",
  },
  { name: "webhook-key-name", type: "string", default: "tls.key", description: "Key file name in --webhook-cert-dir", group: "Webhooks" },
  {
    name: "runner-image",
    type: "string",
    default: "$CAPTF_MANAGER_IMAGE",
    description: "Image of the runner bundle copied into every Job (required; defaults to $CAPTF_MANAGER_IMAGE)",
    group: "Jobs",
  },
  { name: "runner-events", type: "boolean", default: true, description: "Let runners report their progress as Events", group: "Jobs" },
  {
    name: "drift-default-interval",
    type: "duration",
    default: "30m",
    description: "Drift check interval when an object sets none; must be > 0",
    group: "Jobs",
  },
  {
    name: "cluster-operation-gate",
    type: "boolean",
    default: true,
    description: "Never run a TerraformCluster's apply or destroy at the same time as its machines' (per-Cluster write lease)",
    group: "Jobs",
  },
  {
    name: "state-backups",
    type: "int",
    default: 5,
    description: "State backups kept per object (>= 0; 0 takes no new backups)",
    group: "Jobs",
  },
  {
    name: "max-active-jobs",
    type: "int",
    default: 0,
    description: "Jobs running at once across the manager (>= 0; 0 = no limit)",
    group: "Jobs",
  },
  {
    name: "cluster-max-active-jobs",
    type: "int",
    default: 0,
    description: "Default for a TerraformCluster's spec.maxActiveJobs (>= 0; 0 = no limit)",
    group: "Jobs",
  },
  {
    name: "diagnostics-address",
    type: "string",
    default: ":8443",
    description: 'Address of /metrics; "0" disables',
    group: "Diagnostics",
    aliases: ["metrics-bind-address"],
  },
  {
    name: "insecure-diagnostics",
    type: "boolean",
    default: false,
    description: "Serve /metrics over plain HTTP without authentication and authorization",
    group: "Diagnostics",
  },
  {
    name: "tls-cipher-suites",
    type: "list",
    default: "",
    description:
      "Comma-separated TLS 1.2 cipher suites of the diagnostics and webhook servers, Go's names (e.g. " +
      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); empty uses Node's defaults",
    group: "Diagnostics",
  },
  {
    name: "tls-curve-preferences",
    type: "list",
    default: "",
    description:
      "Comma-separated elliptic curves of the diagnostics and webhook servers: CurveP256, CurveP384, CurveP521, X25519; empty " +
      "uses Node's defaults",
    group: "Diagnostics",
  },
  {
    name: "tls-min-version",
    type: "string",
    default: "VersionTLS12",
    description: "Minimum TLS version (VersionTLS12 or VersionTLS13)",
    group: "Diagnostics",
  },
  { name: "v", type: "int", default: 2, description: "Log verbosity: 0–2 info, 3–4 debug, 5+ trace", group: "Logging" },
  {
    name: "vmodule",
    type: "string",
    default: "",
    description: "Accepted for compatibility; per-module verbosity is not supported",
    group: "Logging",
  },
  {
    name: "logging-format",
    type: "string",
    default: "text",
    description: "Log format: text (one readable line per entry) or json",
    group: "Logging",
  },
  { name: "log-flush-frequency", type: "duration", default: "5s", description: "Maximum time between log flushes", group: "Logging" },
  {
    name: "log-json-info-buffer-size",
    type: "string",
    default: "0",
    description: "Accepted for compatibility (component-base); no effect",
    group: "Logging",
  },
  {
    name: "log-json-split-stream",
    type: "boolean",
    default: false,
    description: "Write info to stdout and errors to stderr in json format",
    group: "Logging",
  },
  {
    name: "log-text-info-buffer-size",
    type: "string",
    default: "0",
    description: "Accepted for compatibility (component-base); no effect",
    group: "Logging",
  },
  {
    name: "log-text-split-stream",
    type: "boolean",
    default: false,
    description: "Write info to stdout and errors to stderr in text format",
    group: "Logging",
  },
  {
    name: "feature-gates",
    type: "string",
    default: "",
    description:
      "key=value pairs of logging gates: AllAlpha, AllBeta, ContextualLogging (true), LoggingAlphaOptions, LoggingBetaOptions (true)",
    group: "Logging",
  },
];

/** The logging feature gates component-base knows, with their defaults. */
export const featureGateDefaults: Readonly<Record<string, boolean>> = {
  AllAlpha: false,
  AllBeta: false,
  ContextualLogging: true,
  LoggingAlphaOptions: false,
  LoggingBetaOptions: true,
};

export interface ManagerSettings {
  namespace: string;
  watchFilter: string;
  syncPeriodMillis: number;
  /** `--shards`: 1 = every controller on the leader; more = the cluster controllers on every replica, per held shard. */
  shards: number;
  concurrency: { terraformCluster: number; terraformMachine: number; terraformMachineTemplate: number; terraformMachinePool: number };
  healthAddr: string;
  profilerAddress: string;
  kubeconfig: string;
  leaderElection: { enabled: boolean; leaseDurationMillis: number; renewDeadlineMillis: number; retryPeriodMillis: number };
  webhook: { port: number; certDir: string; certName: string; keyName: string };
  runnerImage: string;
  runnerEvents: boolean;
  driftDefaultIntervalMillis: number;
  clusterOperationGate: boolean;
  stateBackups: number;
  /** `--tracing-otlp-endpoint`; tracing is on with it or with OTEL_TRACES_EXPORTER=otlp. */
  tracing: { otlpEndpoint: string };
  maxActiveJobs: number;
  clusterMaxActiveJobs: number;
  /** Cipher suites and curves in OpenSSL's names (Node's), translated from Go's; empty = Node's defaults. */
  diagnostics: {
    address: string;
    insecure: boolean;
    tlsCipherSuites: string[];
    tlsCurvePreferences: string[];
    tlsMinVersion: "TLSv1.2" | "TLSv1.3";
  };
  logging: { verbosity: number; vmodule: string; format: "text" | "json"; flushFrequencyMillis: number; splitStream: boolean };
  featureGates: Record<string, boolean>;
  /** From $POD_NAMESPACE: the namespace of the leader election Lease. */
  podNamespace: string | undefined;
  /** `system:serviceaccount:<POD_NAMESPACE>:<SERVICE_ACCOUNT_NAME>` when both are set. */
  managerUser: string | undefined;
}

export type ParsedFlags =
  | {
      kind: "run";
      options: ManagerSettings /** Every flag with its effective value, as the startup log prints them. */;
      flagLines: string[];
    }
  | { kind: "help"; text: string }
  | { kind: "version" }
  | { kind: "invalid"; errors: string[]; message: string };

/** Go's TLS cipher suite names (IANA) → OpenSSL's, which Node takes. */
export const goCipherSuites: Readonly<Record<string, string>> = {
  TLS_AES_128_GCM_SHA256: "TLS_AES_128_GCM_SHA256",
  TLS_AES_256_GCM_SHA384: "TLS_AES_256_GCM_SHA384",
  TLS_CHACHA20_POLY1305_SHA256: "TLS_CHACHA20_POLY1305_SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_RSA_WITH_AES_128_GCM_SHA256: "AES128-GCM-SHA256",
  TLS_RSA_WITH_AES_256_GCM_SHA384: "AES256-GCM-SHA384",
  TLS_RSA_WITH_AES_128_CBC_SHA: "AES128-SHA",
  TLS_RSA_WITH_AES_256_CBC_SHA: "AES256-SHA",
};

/** Go's curve names → OpenSSL's. */
export const goCurves: Readonly<Record<string, string>> = { CurveP256: "P-256", CurveP384: "P-384", CurveP521: "P-521", X25519: "X25519" };

const goDurationUnits: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Parses a Go duration (`10m`, `1h30m`, `1.5s`, `300ms`, `0`) into milliseconds; undefined if malformed. */
export function parseGoDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === "0") return 0;
  const sign = trimmed.startsWith("-") ? -1 : 1;
  const body = trimmed.replace(/^[-+]/, "");
  if (!/^(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))*$/.test(body)) return undefined;
  let total = 0;
  for (const [, value, unit] of body.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(value) * goDurationUnits[unit!]!;
  return sign * total;
}

/** Parses `A=true,B=false` against the known gates. */
export function parseFeatureGates(text: string): { gates: Record<string, boolean>; errors: string[] } {
  const gates: Record<string, boolean> = { ...featureGateDefaults };
  const errors: string[] = [];
  for (const pair of text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [key = "", value = ""] = pair.split("=", 2).map((s) => s.trim());
    if (!(key in featureGateDefaults)) errors.push(`--feature-gates: unrecognized feature gate: ${key}`);
    else if (!/^(true|false)$/i.test(value)) errors.push(`--feature-gates: invalid value of ${key}: ${value}, err: want true or false`);
    else gates[key] = value.toLowerCase() === "true";
  }
  return { gates, errors };
}

function buildParser(argv: readonly string[]) {
  let parser = yargs([...argv])
    .scriptName("manager")
    .usage(
      "manager [flags]\n\nThe captf manager: reconciles TerraformCluster, TerraformMachine and TerraformMachinePool objects by " +
        "running Terraform Jobs.",
    )
    .parserConfiguration({ "camel-case-expansion": false, "short-option-groups": false, "strip-aliased": true, "boolean-negation": false })
    .strict()
    .exitProcess(false)
    .help(false)
    .version(false)
    .wrap(120)
    .fail((message, error) => {
      throw error ?? new Error(message);
    })
    .option("help", { alias: "h", type: "boolean", description: "Show this help", group: "Other" })
    .option("version", { type: "boolean", description: "Print the version and exit", group: "Other" });
  for (const flag of managerFlags) {
    parser = parser.option(flag.name, {
      type: flag.type === "boolean" ? "boolean" : "string",
      description: flag.description,
      group: flag.group,
      default: flag.default,
      defaultDescription: flag.type === "boolean" || flag.type === "int" ? String(flag.default) : JSON.stringify(flag.default),
      requiresArg: flag.type !== "boolean",
    });
    // Hidden separate options, not yargs aliases: those would show in the help.
    for (const alias of flag.aliases ?? []) parser = parser.option(alias, { type: "string", hidden: true, requiresArg: true });
  }
  return parser;
}

/** Parses the manager's arguments (without `node` and the script) and environment. */
export async function parseManagerFlags(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ParsedFlags> {
  const parser = buildParser(argv);
  let raw: Record<string, unknown>;
  try {
    raw = parser.parseSync() as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return invalid([message.replace(/^Unknown arguments?: /, "unknown flag: --")]);
  }
  if (raw.help) return { kind: "help", text: await buildParser([]).getHelp() };
  if (raw.version) return { kind: "version" };

  const read = flagReader(raw);
  const options = readSettings(read, env);
  if (read.errors.length > 0) return invalid(read.errors);
  const flagLines = managerFlags.map(
    (flag) => `FLAG: --${flag.name}=${JSON.stringify(flag.name === "runner-image" ? options.runnerImage : read.text(flag.name))}`,
  );
  return { kind: "run", options, flagLines };
}

/** Typed reads of yargs' result; each read's problems are collected in `errors`, in the order of reading. */
interface FlagReader {
  errors: string[];
  text(name: string): string;
  bool(name: string): boolean;
  int(name: string, min: number): number;
  duration(name: string, positive: boolean): number;
  /** A comma-separated list of Go names, each translated through `table`. */
  translate(name: string, table: Readonly<Record<string, string>>): string[];
}

function flagReader(raw: Record<string, unknown>): FlagReader {
  const errors: string[] = [];
  const aliasOf = new Map(managerFlags.flatMap((flag) => (flag.aliases ?? []).map((alias) => [flag.name, alias] as const)));
  const value = (name: string): unknown => {
    const alias = aliasOf.get(name);
    return alias !== undefined && raw[alias] !== undefined ? raw[alias] : raw[name];
  };
  const text = (name: string): string => {
    const v = value(name);
    // A flag given twice arrives as an array: the last one wins, as with Go's flag package.
    return String(Array.isArray(v) ? v[v.length - 1] : (v ?? ""));
  };
  return {
    errors,
    text,
    bool: (name) => {
      const v = value(name);
      return Boolean(Array.isArray(v) ? v[v.length - 1] : v);
    },
    int: (name, min) => {
      const t = text(name);
      const n = Number(t);
      if (!/^-?\d+$/.test(t.trim()) || !Number.isSafeInteger(n)) errors.push(`--${name}: invalid value "${t}": want an integer`);
      else if (n < min) errors.push(`--${name}: must be >= ${min}, got ${n}`);
      return n;
    },
    duration: (name, positive) => {
      const t = text(name);
      const ms = parseGoDuration(t);
      if (ms === undefined) errors.push(`--${name}: invalid duration "${t}": want e.g. 30s, 10m or 1h30m`);
      else if (positive && ms <= 0) errors.push(`--${name}: must be > 0, got ${t}`);
      return ms ?? 0;
    },
    translate: (name, table) =>
      text(name)
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
        .map((entry) => {
          const known = table[entry];
          if (!known) errors.push(`--${name}: unsupported "${entry}": want one of ${Object.keys(table).join(", ")}`);
          return known ?? entry;
        }),
  };
}

/** `--runner-image`, or $CAPTF_MANAGER_IMAGE when the flag keeps its default; required and a valid reference. */
function readRunnerImage(read: FlagReader, env: Readonly<Record<string, string | undefined>>): string {
  const runnerImageFlag = read.text("runner-image");
  const runnerImage = runnerImageFlag === "$CAPTF_MANAGER_IMAGE" ? (env.CAPTF_MANAGER_IMAGE ?? "") : runnerImageFlag;
  if (runnerImage === "") read.errors.push("--runner-image: required (or set $CAPTF_MANAGER_IMAGE)");
  else {
    const problem = imageReferenceProblem(runnerImage);
    if (problem) read.errors.push(`--runner-image: invalid reference "${runnerImage}": ${problem}`);
  }
  return runnerImage;
}

/** The three Lease timings, which must nest as client-go's leader election requires. */
function readLeaderElectionTimings(read: FlagReader) {
  const leaseDurationMillis = read.duration("leader-elect-lease-duration", true);
  const renewDeadlineMillis = read.duration("leader-elect-renew-deadline", true);
  const retryPeriodMillis = read.duration("leader-elect-retry-period", true);
  if (leaseDurationMillis <= renewDeadlineMillis)
    read.errors.push("--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline");
  if (renewDeadlineMillis <= retryPeriodMillis * 1.2)
    read.errors.push("--leader-elect-renew-deadline: must be greater than 1.2 × --leader-elect-retry-period");
  return { leaseDurationMillis, renewDeadlineMillis, retryPeriodMillis };
}

/** The flags checked against a set of values or a syntax: the webhook port, TLS, log format, listen addresses, feature gates. */
function readCheckedFlags(read: FlagReader) {
  const webhookPort = read.int("webhook-port", 1);
  if (webhookPort > 65535) read.errors.push(`--webhook-port: must be <= 65535, got ${webhookPort}`);
  const tlsMinVersion = read.text("tls-min-version");
  if (tlsMinVersion !== "VersionTLS12" && tlsMinVersion !== "VersionTLS13")
    read.errors.push(`--tls-min-version: unsupported "${tlsMinVersion}": want VersionTLS12 or VersionTLS13`);
  const loggingFormat = read.text("logging-format");
  if (loggingFormat !== "text" && loggingFormat !== "json")
    read.errors.push(`--logging-format: unsupported "${loggingFormat}": want text or json`);
  for (const name of ["health-addr", "diagnostics-address", "profiler-address"]) {
    const address = read.text(name);
    if (address !== "" && address !== "0" && !/^(\[[^\]]+\]|[^:]*):\d{1,5}$/.test(address))
      read.errors.push(`--${name}: invalid address "${address}": want host:port, e.g. ":9440"`);
  }
  const tlsCipherSuites = [...new Set(read.translate("tls-cipher-suites", goCipherSuites))];
  const tlsCurvePreferences = read.translate("tls-curve-preferences", goCurves);
  const gates = parseFeatureGates(read.text("feature-gates"));
  read.errors.push(...gates.errors);
  return {
    webhookPort,
    tlsMinVersion: tlsMinVersion === "VersionTLS13" ? ("TLSv1.3" as const) : ("TLSv1.2" as const),
    loggingFormat: loggingFormat === "json" ? ("json" as const) : ("text" as const),
    tlsCipherSuites,
    tlsCurvePreferences,
    featureGates: gates.gates,
  };
}

/** Every flag read into {@link ManagerSettings}; problems land in `read.errors`. */
function readSettings(read: FlagReader, env: Readonly<Record<string, string | undefined>>): ManagerSettings {
  const runnerImage = readRunnerImage(read, env);
  const leaderElectionTimings = readLeaderElectionTimings(read);
  const checked = readCheckedFlags(read);
  return {
    namespace: read.text("namespace"),
    watchFilter: read.text("watch-filter"),
    syncPeriodMillis: read.duration("sync-period", true),
    shards: read.int("shards", 1),
    concurrency: {
      terraformCluster: read.int("terraformcluster-concurrency", 1),
      terraformMachine: read.int("terraformmachine-concurrency", 1),
      terraformMachineTemplate: read.int("terraformmachinetemplate-concurrency", 1),
      terraformMachinePool: read.int("terraformmachinepool-concurrency", 1),
    },
    healthAddr: read.text("health-addr"),
    profilerAddress: read.text("profiler-address"),
    kubeconfig: read.text("kubeconfig"),
    leaderElection: { enabled: read.bool("leader-elect"), ...leaderElectionTimings },
    webhook: {
      port: checked.webhookPort,
      certDir: read.text("webhook-cert-dir"),
      certName: read.text("webhook-cert-name"),
      keyName: read.text("webhook-key-name"),
    },
    runnerImage,
    runnerEvents: read.bool("runner-events"),
    driftDefaultIntervalMillis: read.duration("drift-default-interval", true),
    clusterOperationGate: read.bool("cluster-operation-gate"),
    stateBackups: read.int("state-backups", 0),
    tracing: { otlpEndpoint: read.text("tracing-otlp-endpoint") },
    maxActiveJobs: read.int("max-active-jobs", 0),
    clusterMaxActiveJobs: read.int("cluster-max-active-jobs", 0),
    diagnostics: {
      address: read.text("diagnostics-address"),
      insecure: read.bool("insecure-diagnostics"),
      tlsCipherSuites: checked.tlsCipherSuites,
      tlsCurvePreferences: checked.tlsCurvePreferences,
      tlsMinVersion: checked.tlsMinVersion,
    },
    logging: {
      verbosity: read.int("v", 0),
      vmodule: read.text("vmodule"),
      format: checked.loggingFormat,
      flushFrequencyMillis: read.duration("log-flush-frequency", true),
      splitStream: checked.loggingFormat === "json" ? read.bool("log-json-split-stream") : read.bool("log-text-split-stream"),
    },
    featureGates: checked.featureGates,
    podNamespace: env.POD_NAMESPACE || undefined,
    managerUser:
      env.POD_NAMESPACE && env.SERVICE_ACCOUNT_NAME ? `system:serviceaccount:${env.POD_NAMESPACE}:${env.SERVICE_ACCOUNT_NAME}` : undefined,
  };
}

function invalid(errors: string[]): ParsedFlags {
  return { kind: "invalid", errors, message: `manager: invalid flags: ${errors.join("; ")}` };
}

/** The pino level for a component-base verbosity. */
export function logLevelForVerbosity(verbosity: number): "info" | "debug" | "trace" {
  return verbosity >= 5 ? "trace" : verbosity >= 3 ? "debug" : "info";
}
