import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { contractVersion } from "@captf/contract/roles";
import type { Options } from "yargs";
import { DurationSyntaxError, parseDuration } from "./durations.js";
import {
  createEventRecorder,
  defaultServiceAccountDir,
  noEvents,
  parseObjectReference,
  resolveInClusterEndpoint,
  type ApiEndpoint,
  type EventRecorder,
} from "./events.js";
import { standardStreamWriter } from "./output.js";
import { shrinkResult } from "./result.js";
import { resultVersion, type RunResult } from "@captf/contract/run-result";
import { runOperation, type RunOptions } from "./run.js";
import { operations, type Operation } from "@captf/contract/run-result";
import { runnerVersion } from "./version.js";
import { BrokerUsageError, brokerFlags, brokerSummary } from "./broker/command.js";
import { parseFast } from "./flags.js";
import type { PlanDiffKeeper } from "./plan-diff-store.js";

/** Exit codes of every runner command. */
export const exitCodes = { ok: 0, failure: 1, usage: 2 } as const;

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted when the runner is told to stop (SIGTERM); a run then ends `interrupted`. */
  signal?: AbortSignal;
  /** Where `copy` finds the bundle when --from is not given: the directory of the running runner.mjs. */
  bundleDir?: string;
}

class UsageError extends Error {}

const defaultResultPath = "/dev/termination-log";
/** At most this long is spent delivering the last events after the result is written. */
const eventsCloseTimeoutMs = 5000;

const overview = `$0 <command> [options]

The captf runner runs inside every captf Job. It prepares the generated root module the manager
rendered into /captf/config, runs the module image's OpenTofu or Terraform runtime
(/captf/runtime) step by step against the kubernetes state backend, and reports the outcome as
the container's termination message: a JSON result document of at most 4096 bytes. Everything
it prints or writes has the run's secrets replaced by "(sensitive)".`;

const exitStatus = `EXIT STATUS
  0  the operation succeeded (a checked apply whose plan has no changes included)
  1  a step failed, the run was interrupted, blocked or found the plan changed, the image does
     not follow the image contract, preparing failed, or the result could not be written
  2  usage error: unknown command or operation, bad or extra arguments

See docs/runner.md for the result document, the plan hash and the events.`;

const runSummary = "Run one operation of a module: apply, destroy, plan, drift, refresh or restore";

const brokerManual = `The state broker runs beside the module's container in every Job (a native sidecar) and holds
the Job's ServiceAccount token, which the module's container never gets. It listens on a free
port of 127.0.0.1 and writes <dir>/kubeconfig (that port and a token made for this run); the
backend (config_path) and the runner's events (run --broker) use it.

ALLOWED
  the state Secret tfstate-default-<suffix> and its -part-N chunks: get, create, update, and
  the label-selected list, narrowed to them; the lock Lease lock-tfstate-default-<suffix>:
  get, create, update; events.k8s.io events about --event-object. Everything else is refused
  with 403 (401 without the token), logged, and reported once per Job as a BrokerRefused event.

SIGNALS
  SIGTERM (or SIGINT) stops it: the summary (requests, allowed, refused by target, the first
  refusals) is written to --result as JSON, and it exits 0.

${exitStatus}`;

const runManual = `PREPARE
  Preflight checks the image layout: a module under --module, an executable --bin. Prepare
  copies the top-level files of --config into <workdir>/root (where every step runs) and
  rewrites the environment: HOME and every TF_* and KUBE_* variable are dropped except
  TF_IN_AUTOMATION, TF_INPUT and KUBE_NAMESPACE; TF_DATA_DIR=<workdir>/.terraform and
  HOME=<workdir> are forced; TF_CLI_CONFIG_FILE names a filesystem-mirror config only when
  --providers is a directory.
  With --state-encryption, TF_ENCRYPTION is kept and must be set, and the runtime must be
  OpenTofu 1.7 or later (its version is read first; any other ends the run with error kind
  image-layout before a step runs); a restore's encrypted backup and an encrypted
  errored.tfstate are decrypted by the runtime (state pull of a local copy) before state push.

STEPS
  apply    init, validate, apply
           with --guard-deletes or --expect-plan: init, validate, plan -out, show -json, and
           the apply of that saved plan; a plan without changes ends the run without an apply
  destroy  init, destroy
  plan     init, validate, plan -out, show -json (applies nothing; reports the plan hash)
  drift    init, apply -refresh-only, plan -refresh=false -out, show -json
  refresh  init, apply -refresh-only
  restore  init, state push -force of the backup in <config>/restore/0..N-1, state list
  With --force-unlock, force-unlock runs right after init.

SIGNALS
  SIGTERM (or SIGINT) stops the running step: SIGTERM to the runtime, SIGKILL to its process
  group after --stop-timeout. The run ends with error kind "interrupted".

RESULT
  The result document (JSON, at most 4096 bytes) goes to --result; a failure summary of at
  most 512 bytes is in its error.summary.

${exitStatus}`;

function resultPathFromArgv(argv: readonly string[]): string {
  for (const [index, arg] of argv.entries()) {
    if (arg.startsWith("--result=")) return arg.slice("--result=".length);
    if (arg === "--result" && argv[index + 1] !== undefined) return argv[index + 1]!;
  }
  return defaultResultPath;
}

function opFromArgv(argv: readonly string[]): string {
  for (const [index, arg] of argv.entries()) {
    if (arg.startsWith("--op=")) return arg.slice("--op=".length);
    if (arg === "--op" && argv[index + 1] !== undefined) return argv[index + 1]!;
  }
  return "";
}

function flagsResult(op: string, summary: string): RunResult {
  return earlyFailure(op, "flags", summary);
}

/** The result of a run that ended before its first step: bad flags, or no broker to reach. */
function earlyFailure(op: string, step: "flags" | "prepare", summary: string): RunResult {
  return {
    version: resultVersion,
    op,
    image: { ref: "", providersMirror: false },
    runtime: { command: [], version: "" },
    steps: [],
    drift: null,
    error: { kind: "step", step, summary: summary.slice(0, 512) },
  };
}

async function writeResult(path: string, result: RunResult, io: CliIo): Promise<boolean> {
  try {
    writeFileSync(path, shrinkResult(result));
    return true;
  } catch (error) {
    io.stderr(`runner: cannot write the result to ${path}: ${(error as Error).message}; pass --result with a writable path\n`);
    return false;
  }
}

type Yargs = typeof import("yargs").default;
let yargsModule: Yargs | undefined;
/** yargs loads only when a parse needs it: `run` in a Job takes the fast path below and never pays for it. */
async function loadYargs(): Promise<Yargs> {
  yargsModule ??= (await import("yargs")).default;
  return yargsModule;
}

/** Settings every parser shares: strict flags, errors thrown, nothing printed by yargs itself. */
function base(yargs: Yargs, argv: readonly string[]) {
  return yargs([...argv])
    .scriptName("runner")
    .parserConfiguration({ "greedy-arrays": false })
    .strict()
    .version(false)
    .help()
    .wrap(100)
    .exitProcess(false)
    .fail((message, error) => {
      throw error ?? new UsageError(message);
    });
}

/** `run`'s flags, once: the yargs parser (help, errors) and the fast path both read this table. */
const runFlags = {
  op: { type: "string", choices: operations, demandOption: true, describe: "The operation to run" },
  bin: { type: "string", array: true, default: ["/captf/runtime"], describe: "The runtime command; repeat for each argument of it" },
  image: { type: "string", default: "", describe: "The module image reference, echoed in the result" },
  module: { type: "string", default: "/captf/module", describe: "The module directory (checked by preflight)" },
  providers: { type: "string", default: "/captf/providers", describe: "The provider mirror; used only when it is a directory" },
  workdir: { type: "string", default: "/captf/work", describe: "The writable work directory; steps run in <workdir>/root" },
  config: { type: "string", default: "/captf/config", describe: "The rendered root (main.tf.json, terraform.tfvars.json)" },
  "backend-config": {
    type: "string",
    array: true,
    default: [] as string[],
    describe: "A key=value for init's -backend-config; repeatable",
  },
  "lock-timeout": { type: "string", default: "5m0s", describe: "How long a step waits for the state lock (passed as -lock-timeout=<n>s)" },
  "stop-timeout": { type: "string", default: "1m0s", describe: "After SIGTERM, how long a step may take before it is killed" },
  "force-unlock": { type: "string", describe: "A stale lock ID to clear after init; an already released lock is fine" },
  "guard-deletes": {
    type: "boolean",
    default: false,
    describe: "Stop an apply whose plan deletes or replaces resources (error kind blocked)",
  },
  "inputs-hash": { type: "string", describe: "The inputs hash this Job renders" },
  "allow-deletes-hash": { type: "string", describe: "The approved inputs hash; equal to --inputs-hash, it lets a guarded apply delete" },
  "expect-plan": { type: "string", describe: "The approved plan hash (p1:…); any other plan stops with plan-changed" },
  "restore-chunks": { type: "number", default: 0, describe: "The number of backup chunks under <config>/restore (restore)" },
  "restore-resources": { type: "number", default: 0, describe: "The backup's managed resources; state list must find some when > 0" },
  "state-encryption": {
    type: "boolean",
    default: false,
    describe: "The object encrypts its state: keep TF_ENCRYPTION (required), refuse a runtime that cannot encrypt",
  },
  "event-object": { type: "string", describe: "<apiVersion>/<kind>/<namespace>/<name>/<uid> the run's events are about; none without it" },
  "job-name": { type: "string", describe: "The Job, the events' related object" },
  result: { type: "string", default: defaultResultPath, describe: "Where the result document is written" },
  broker: { type: "string", describe: "The state broker's directory: wait for its kubeconfig, send events through it" },
  "events-server": { type: "string", hidden: true, describe: "API server URL for events instead of the in-cluster one" },
  "service-account-dir": {
    type: "string",
    hidden: true,
    default: defaultServiceAccountDir,
    describe: "Where the token and ca.crt for events are",
  },
} satisfies Record<string, Options>;

/** The flags of `version` and `copy`, for their fast path (yargs still gives their help and errors). */
const versionFlags = { format: { type: "string", choices: ["text", "json"], default: "text" } } satisfies Record<string, Options>;
const copyFlags = { from: { type: "string" } } satisfies Record<string, Options>;

const copySummary = "Copy the runner bundle (node, its libraries, runner.mjs) into <dest>";
const versionSummary = "Print the runner's version";

/** The top level only lists the commands: each command parses its own arguments (see {@link commandParsers}). */
function topParser(yargs: Yargs, argv: readonly string[]) {
  return base(yargs, argv)
    .usage(overview)
    .epilog(exitStatus)
    .command("run", runSummary)
    .command("broker", brokerSummary)
    .command("copy <dest>", copySummary)
    .command("version", versionSummary)
    .demandCommand(1, "name a command: run, broker, copy or version");
}

// Parsers without yargs commands: a yargs command lays out its whole help text on every run.
const commandParsers = {
  run: (yargs: Yargs, argv: readonly string[]) =>
    base(yargs, argv)
      .usage(`$0 run --op <operation> [options]\n\n${runSummary}.`)
      .epilog(runManual)
      .demandCommand(0, 0, "", "run takes no arguments besides its flags")
      .options(runFlags),
  broker: (yargs: Yargs, argv: readonly string[]) =>
    base(yargs, argv)
      .usage(`$0 broker --event-object <ref> --state-suffix <suffix> [options]\n\n${brokerSummary}.`)
      .epilog(brokerManual)
      .demandCommand(0, 0, "", "broker takes no arguments besides its flags")
      .options(brokerFlags),
  copy: (yargs: Yargs, argv: readonly string[]) =>
    base(yargs, argv)
      .usage(
        `$0 copy <dest> [--from <dir>]\n\n${copySummary}, creating <dest> when missing. The Job's init container runs it to put ` +
          `the runner into the shared /captf/bin volume.`,
      )
      .epilog(exitStatus)
      .demandCommand(1, 1, "copy needs the target directory <dest>", "copy takes one <dest>")
      .option("from", { ...copyFlags.from, describe: "The bundle directory (default: the directory of the running runner.mjs)" }),
  version: (yargs: Yargs, argv: readonly string[]) =>
    base(yargs, argv)
      .usage(`$0 version [--format text|json]\n\n${versionSummary}.`)
      .demandCommand(0, 0, "", "version takes no arguments")
      .option("format", { ...versionFlags.format, describe: "Output format" }),
} as const;

/** `run`'s flags without yargs when they are well-formed (see {@link parseFast}); undefined otherwise. */
export function parseRunFast(argv: readonly string[]): Record<string, unknown> | undefined {
  const args = parseFast(runFlags, argv);
  if (args) delete args._;
  return args;
}

/** What each command parses without yargs: a Job's `run`, its init container's `copy`, and `version`. */
export const fastParsers = {
  run: parseRunFast,
  broker: (argv: readonly string[]) => parseFast(brokerFlags, argv),
  copy: (argv: readonly string[]) => parseFast(copyFlags, argv, 1),
  version: (argv: readonly string[]) => parseFast(versionFlags, argv),
} as const;

/** A command's arguments through yargs, as {@link main} parses anything the fast path declines. */
export async function parseWithYargs(command: keyof typeof commandParsers, argv: readonly string[]): Promise<Record<string, unknown>> {
  return (await commandParsers[command](await loadYargs(), argv).parseAsync([...argv])) as Record<string, unknown>;
}

/** `run`'s flags through yargs. */
export function parseRunWithYargs(argv: readonly string[]): Promise<Record<string, unknown>> {
  return parseWithYargs("run", argv);
}

function isCommand(name: string | undefined): name is keyof typeof commandParsers {
  return name !== undefined && Object.hasOwn(commandParsers, name);
}

/** `run`'s flags as {@link RunOptions}; a bad value is a usage error. */
function runOptions(args: Record<string, unknown>): RunOptions {
  const duration = (flag: string) => {
    try {
      return parseDuration(String(args[flag]));
    } catch (error) {
      throw new UsageError(`--${flag}: ${(error as DurationSyntaxError).message}`);
    }
  };
  const count = (flag: string) => {
    const value = args[flag];
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0)
      throw new UsageError(`--${flag} must be a whole number of at least 0`);
    return value;
  };
  const optional = (flag: string) => (typeof args[flag] === "string" && args[flag] !== "" ? (args[flag] as string) : undefined);
  const [command, ...commandArgs] = args.bin as string[];
  if (!command) throw new UsageError("--bin must name the runtime command");
  // Steps run in <workdir>/root: a relative path would point somewhere else there.
  const absolute = (flag: string) => resolve(String(args[flag]));
  return {
    op: args.op as Operation,
    bin: [command.includes("/") ? resolve(command) : command, ...commandArgs],
    image: String(args.image),
    moduleDir: absolute("module"),
    providersDir: absolute("providers"),
    workdir: absolute("workdir"),
    configDir: absolute("config"),
    backendConfig: args["backend-config"] as string[],
    lockTimeoutMs: duration("lock-timeout"),
    stopTimeoutMs: duration("stop-timeout"),
    forceUnlock: optional("force-unlock"),
    guardDeletes: Boolean(args["guard-deletes"]),
    inputsHash: optional("inputs-hash"),
    allowDeletesHash: optional("allow-deletes-hash"),
    expectPlan: optional("expect-plan"),
    restoreChunks: count("restore-chunks"),
    restoreResources: count("restore-resources"),
    stateEncryption: Boolean(args["state-encryption"]),
  };
}

/** The run's event recorder: through the broker when given one (once it is there), else straight to the API server. */
function eventRecorder(args: Record<string, unknown>, io: CliIo, broker?: Promise<ApiEndpoint>): EventRecorder {
  const object = args["event-object"];
  if (typeof object !== "string" || object === "") return noEvents;
  const log = (message: string) =>
    io.stderr(JSON.stringify({ ts: new Date().toISOString(), level: "info", logger: "runner", msg: message }) + "\n");
  try {
    const regarding = parseObjectReference(object);
    const endpoint =
      broker ??
      resolveInClusterEndpoint({
        server: typeof args["events-server"] === "string" ? args["events-server"] : undefined,
        serviceAccountDir: String(args["service-account-dir"]),
        env: io.env,
      });
    if (typeof endpoint === "string") {
      log(`events disabled: ${endpoint}`);
      return noEvents;
    }
    const instance = io.env.POD_NAME || io.env.HOSTNAME || "runner";
    return createEventRecorder({ endpoint, regarding, jobName: args["job-name"] as string | undefined, instance, log });
  } catch (error) {
    log(`events disabled: ${(error as Error).message}`);
    return noEvents;
  }
}

/**
 * Where a plan's diff is kept: the object's plan diff Secret, written through the broker; none outside a Job.
 * Loaded when a plan is kept: its Secret's name and labels need node:crypto, which a run's start never loads.
 */
function planDiffKeeper(args: Record<string, unknown>, broker?: Promise<ApiEndpoint>): PlanDiffKeeper | undefined {
  const object = args["event-object"];
  const job = args["job-name"];
  if (!broker || typeof object !== "string" || typeof job !== "string" || job === "") return undefined;
  let owner: ReturnType<typeof parseObjectReference>;
  try {
    owner = parseObjectReference(object);
  } catch {
    // A malformed --event-object: eventRecorder logs it.
    return undefined;
  }
  return async (input) => {
    const { createPlanDiffKeeper } = await import("./plan-diff-store.js");
    await createPlanDiffKeeper({ endpoint: broker, object: owner, job })(input);
  };
}

async function closeEvents(events: EventRecorder): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([events.close(), new Promise((resolve) => (timer = setTimeout(resolve, eventsCloseTimeoutMs)))]);
  clearTimeout(timer);
}

/**
 * In a Job the runner is its container's PID 1: once the steps are done, every process still in the
 * container was left by module code (a provisioner, a provider), and one could write its own result
 * over the runner's. SIGKILL to -1 from PID 1 reaches exactly the container's other processes.
 */
function stopLeftovers(): void {
  if (process.pid !== 1) return;
  try {
    process.kill(-1, "SIGKILL");
  } catch {
    // ESRCH: nothing was left.
  }
}

/** How long `run --broker` waits for the broker sidecar's kubeconfig. */
const brokerStartTimeoutMs = 60_000;

async function run(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const options = runOptions(args);
  const brokerDir = typeof args.broker === "string" && args.broker !== "" ? args.broker : undefined;
  // The broker sidecar starts beside the runner: the run prepares meanwhile, and its first step waits for it.
  const broker = brokerDir
    ? import("./broker/connection.js").then(({ waitForBroker }) => waitForBroker(brokerDir, brokerStartTimeoutMs, io.signal))
    : undefined;
  const endpoint = broker?.then((found) => found.endpoint);
  // The broker's per-run token: no Kubernetes credential, but the key to this object's state for the Job's life.
  const ready = broker?.then((found) => ({ secrets: [found.token] }));
  // Each is awaited later (the first step, the first event) or never, when preflight stops the run: a failure is reported there.
  for (const pending of [endpoint, ready]) pending?.catch(() => {});
  const events = eventRecorder(args, io, endpoint);
  const keepPlanDiff = planDiffKeeper(args, endpoint);
  const { result, exitCode } = await runOperation(options, {
    stdout: io.stdout,
    stderr: io.stderr,
    env: io.env,
    signal: io.signal ?? new AbortController().signal,
    events,
    ...(ready ? { ready } : {}),
    ...(keepPlanDiff ? { keepPlanDiff } : {}),
  });
  stopLeftovers();
  const written = await writeResult(String(args.result), result, io);
  await closeEvents(events);
  return written ? exitCode : exitCodes.failure;
}

async function copy(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const from = typeof args.from === "string" ? args.from : (io.bundleDir ?? dirname(fileURLToPath(import.meta.url)));
  try {
    // Only the init container copies: a run never loads this.
    const { copyBundle } = await import("./copy.js");
    const { files, bytes } = await copyBundle(from, String(args.dest));
    io.stdout(`copied the runner bundle from ${from} to ${String(args.dest)}: ${files} files, ${bytes} bytes\n`);
    return exitCodes.ok;
  } catch (error) {
    io.stderr(`runner copy: ${(error as Error).message}\n`);
    return exitCodes.failure;
  }
}

async function version(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const fields = { runner: runnerVersion, contract: contractVersion, node: process.version };
  io.stdout(
    args.format === "json"
      ? `${JSON.stringify(fields)}\n`
      : `runner ${runnerVersion} (contract ${contractVersion}, node ${process.version})\n`,
  );
  return exitCodes.ok;
}

/** Runs a parsed command; `args._` holds its positional arguments. */
async function dispatch(name: string, args: Record<string, unknown>, io: CliIo): Promise<number> {
  if (name === "copy") return await copy({ ...args, dest: String((args._ as unknown[])[0]) }, io);
  if (name === "version") return await version(args, io);
  if (name === "broker") {
    // Only the broker loads its server: a run never does.
    const { runBroker } = await import("./broker/command.js");
    return await runBroker(args, io);
  }
  return await run(args, io);
}

/**
 * The runner CLI, in-process: parses `argv` (without the node and script paths), runs the command
 * and returns its exit code. A usage error of `run` still writes a result (step "flags").
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  // `runner --version` is `runner version`, as the reference CLI's global flag.
  const [name, ...rest] = argv[0] === "--version" ? ["version", ...argv.slice(1)] : argv;
  let help = "";
  try {
    // A Job's well-formed commands are parsed without yargs; anything unusual goes through yargs for its exact errors and help.
    const fast = isCommand(name) ? fastParsers[name](rest) : undefined;
    if (fast) return await dispatch(name!, fast, io);
    const yargs = await loadYargs();
    const parser = isCommand(name) ? commandParsers[name](yargs, rest) : topParser(yargs, argv);
    const parserArgv = isCommand(name) ? rest : argv;
    // A parse callback captures the help text, but makes yargs lay it out on every parse: only for --help.
    const wantsHelp = parserArgv.some((arg) => arg === "--help" || arg === "-h");
    const args = (await (wantsHelp
      ? parser.parseAsync([...parserArgv], {}, (_error, _args, output) => {
          help = output;
        })
      : parser.parseAsync([...parserArgv]))) as Record<string, unknown>;
    if (help || wantsHelp) {
      io.stdout(`${help}\n`);
      return exitCodes.ok;
    }
    return await dispatch(name!, args, io);
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof BrokerUsageError) && !(error instanceof Error && error.name === "YError")) {
      io.stderr(`runner: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      return exitCodes.failure;
    }
    io.stderr(`runner: ${error.message}\nRun "runner --help" or "runner <command> --help" for usage.\n`);
    if (name === "run") await writeResult(resultPathFromArgv(argv), flagsResult(opFromArgv(argv), error.message), io);
    return exitCodes.usage;
  }
}

/** Runs the CLI as the process: SIGTERM and SIGINT stop the run, the exit code becomes the process's. */
export async function runFromProcess(argv: readonly string[] = process.argv.slice(2)): Promise<number> {
  const stop = new AbortController();
  const stdout = standardStreamWriter({ fd: 1, stream: () => process.stdout });
  const stderr = standardStreamWriter({ fd: 2, stream: () => process.stderr });
  const onSignal = (signal: NodeJS.Signals) => {
    stderr(
      `${JSON.stringify({
        ts: new Date().toISOString(),
        level: "info",
        logger: "runner",
        msg: `received ${signal}; stopping the ` + `running step`,
      })}\n`,
    );
    stop.abort();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    return await main(argv, {
      stdout,
      stderr,
      env: process.env,
      signal: stop.signal,
    });
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}
