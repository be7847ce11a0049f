#!/usr/bin/env node
// The manager process bench/controller.mjs measures, alone in its process so its RSS is its own.
// It is the shipped manager program minus its admission server: the manager's own flags
// (parseManagerFlags), bootstrapManager (logger, client, metrics, Manager) and
// createManagerControllers (every controller and the reconciler's dependencies exactly as
// manager-main wires them: identity credentials, events, leases, job slots, …), so the bench
// follows whatever the manager grows. No leader election.
//
//   node bench/lib/controller-manager.mjs --kubeconfig <path> [--concurrency 10] [--mode manager|informers] [--sync-period 10m]
//                                     [--manager-flag=--max-active-jobs=20 ...]
//
// --mode informers is the baseline: the same Manager, controllers and watches (so the same
// informer caches), each reconcile replaced by one that returns at once. Prints one JSON line on
// stdout once serving ({"pid","metricsPort","healthPort","controllers"}); the manager's log
// (text, --v=2 as shipped) goes to stderr. Stops on SIGTERM/SIGINT, or when its stdin closes
// (the bench that started it is gone). SIGUSR2 runs a full garbage collection (needs --expose-gc).
import { parseArgs } from "node:util";
import { loadController, loadControllerFile } from "./controller-packages.mjs";

const { values: flags } = parseArgs({
  options: {
    kubeconfig: { type: "string" },
    concurrency: { type: "string", default: "10" },
    mode: { type: "string", default: "manager" },
    "sync-period": { type: "string", default: "10m" },
    // More of the manager's own flags, passed through as given (the drills' --max-active-jobs, …).
    "manager-flag": { type: "string", multiple: true, default: [] },
  },
});
if (!flags.kubeconfig) throw new Error("--kubeconfig is required");
if (flags.mode !== "manager" && flags.mode !== "informers") throw new Error(`--mode ${flags.mode}: manager or informers`);

const { parseManagerFlags, bootstrapManager, shutdownSignal } = await loadController();
const { addManagerControllers, createManagerControllers, managerBuildInfo, managerSharding } = await loadControllerFile("manager-main.js");

const parsed = await parseManagerFlags(
  [
    `--kubeconfig=${flags.kubeconfig}`,
    "--leader-elect=false",
    "--health-addr=127.0.0.1:0",
    "--diagnostics-address=127.0.0.1:0",
    "--insecure-diagnostics",
    `--terraformmachine-concurrency=${flags.concurrency}`,
    `--sync-period=${flags["sync-period"]}`,
    "--runner-image=registry.invalid/captf/captf-controller:bench",
    ...flags["manager-flag"],
  ],
  // The namespace of the shard Leases (bench/lib/controller-shards.mjs sets it).
  { POD_NAMESPACE: process.env.POD_NAMESPACE },
);
if (parsed.kind !== "run") throw new Error(`the manager's flags: ${parsed.message ?? parsed.kind}`);
const settings = parsed.options;
const { logger, client, metrics, manager } = bootstrapManager(settings, {
  buildInfo: managerBuildInfo(),
  stdout: process.stderr,
  stderr: process.stderr,
});

const controllers = createManagerControllers({ client, logger, metrics, instance: `bench-${process.pid}`, manager }, settings);
// --manager-flag=--shards=N (bench/lib/controller-shards.mjs): the cluster controllers gated to the shards this process claims.
const sharding = managerSharding(settings, { logger, metrics, client, manager });
// The baseline: the same controller (name, watches, queue), its reconcile replaced by nothing.
addManagerControllers(
  manager,
  controllers.map((controller) => (flags.mode === "manager" ? controller : { ...controller, reconcile: async () => {} })),
  sharding?.gate,
);
const shardsStop = new AbortController();
const shardsRun = sharding?.coordinator.run(shardsStop.signal);

process.on("SIGUSR2", () => globalThis.gc?.());
const signal = shutdownSignal(logger);
// The bench holds our stdin: when it goes away (killed, crashed), stop as on SIGTERM.
const orphaned = new AbortController();
process.stdin
  .on("end", () => orphaned.abort())
  .on("error", () => orphaned.abort())
  .resume();
const running = manager.run(AbortSignal.any([signal, orphaned.signal]));
for (;;) {
  const { health, metrics: metricsPort } = manager.ports;
  if (health !== undefined && metricsPort !== undefined) {
    const announced = {
      pid: process.pid,
      metricsPort,
      healthPort: health,
      controllers: controllers.map((c) => `${c.name}:${c.concurrency}`),
    };
    process.stdout.write(`${JSON.stringify(announced)}\n`);
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
}
const exit = await running;
shardsStop.abort();
await shardsRun;
client.close();
// As manager-main: exit explicitly, idle sockets (and the stdin pipe) must not hold the process.
process.exit(exit.reason === "stopped" ? 0 : 1);
