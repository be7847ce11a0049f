import { writeFileSync } from "node:fs";
import type { Options } from "yargs";
import {
  createEventRecorder,
  defaultServiceAccountDir,
  parseObjectReference,
  resolveInClusterEndpoint,
  type ObjectReference,
} from "../events.js";

/**
 * `runner broker`: the state broker as a command, for `runner broker` (help, usage errors) and for
 * broker.cjs, the small entry a Job's sidecar starts without the runner's code.
 */

export const brokerSummary = "Serve the module's container this object's state, lock and events, and nothing else";

/** The broker's exit codes, the runner's: 0 stopped, 1 could not serve, 2 usage. */
export const brokerExitCodes = { ok: 0, failure: 1, usage: 2 } as const;
const defaultResultPath = "/dev/termination-log";
/** At most this long is spent delivering the refusal event when stopped. */
const eventsCloseTimeoutMs = 2000;

/** A bad flag value: the caller reports it as a usage error. */
export class BrokerUsageError extends Error {}

/** `broker`'s flags: the yargs parser and the fast path read this table. */
export const brokerFlags = {
  "event-object": {
    type: "string",
    demandOption: true,
    describe: "<apiVersion>/<kind>/<namespace>/<name>/<uid>: the one object this broker serves",
  },
  "state-suffix": {
    type: "string",
    demandOption: true,
    describe: "The object's state suffix: its Secret tfstate-default-<suffix> and Lease lock-tfstate-default-<suffix>",
  },
  "job-name": { type: "string", describe: "The Job, the refusal event's related object" },
  dir: { type: "string", default: "/captf/broker", describe: "Where the kubeconfig for the module's container is written" },
  result: {
    type: "string",
    default: defaultResultPath,
    describe: "Where the summary (requests, refusals) is written when the broker stops",
  },
  "log-requests": { type: "boolean", default: false, describe: "Log every request, allowed ones too" },
  server: { type: "string", hidden: true, describe: "API server URL instead of the in-cluster one" },
  "service-account-dir": {
    type: "string",
    hidden: true,
    default: defaultServiceAccountDir,
    describe: "Where the Job's token and ca.crt are",
  },
} satisfies Record<string, Options>;

export interface BrokerIo {
  stderr: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted on SIGTERM: the broker stops and writes its summary. */
  signal?: AbortSignal;
}

/** Serves until SIGTERM, then writes its summary where the manager reads it (the termination message). */
export async function runBroker(args: Record<string, unknown>, io: BrokerIo): Promise<number> {
  const log = (level: "info" | "warn", msg: string, fields: Record<string, unknown> = {}) =>
    io.stderr(`${JSON.stringify({ ts: new Date().toISOString(), level, logger: "broker", msg, ...fields })}\n`);
  let object: ObjectReference;
  try {
    object = parseObjectReference(String(args["event-object"]));
  } catch (error) {
    throw new BrokerUsageError((error as Error).message);
  }
  const upstream = resolveInClusterEndpoint({
    server: typeof args.server === "string" ? args.server : undefined,
    serviceAccountDir: String(args["service-account-dir"]),
    env: io.env,
  });
  if (typeof upstream === "string") {
    log("warn", `cannot reach the API server: ${upstream}`);
    return brokerExitCodes.failure;
  }
  const { brokerScope } = await import("./policy.js");
  const { startBroker } = await import("./server.js");
  const events = createEventRecorder({
    endpoint: upstream,
    regarding: object,
    jobName: typeof args["job-name"] === "string" ? args["job-name"] : undefined,
    instance: io.env.POD_NAME || io.env.HOSTNAME || "broker",
    log: (message) => log("info", message),
  });
  let running;
  try {
    running = await startBroker({
      scope: brokerScope(object, String(args["state-suffix"])),
      dir: String(args.dir),
      upstream,
      events,
      log,
      logRequests: Boolean(args["log-requests"]),
    });
  } catch (error) {
    log("warn", `cannot start: ${(error as Error).message}`);
    return brokerExitCodes.failure;
  }
  const signal = io.signal ?? new AbortController().signal;
  if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  const summary = await running.close();
  log("info", "stopped", { requests: summary.requests, allowed: summary.allowed, refused: summary.refused });
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([events.close(), new Promise((resolve) => (timer = setTimeout(resolve, eventsCloseTimeoutMs)))]);
  clearTimeout(timer);
  try {
    writeFileSync(String(args.result), shrinkBrokerSummary(summary));
  } catch (error) {
    log("warn", `cannot write the summary to ${String(args.result)}: ${(error as Error).message}`);
  }
  return brokerExitCodes.ok;
}

/** The summary as JSON within a termination message's 4096 bytes: refusals are dropped from the end until it fits. */
export function shrinkBrokerSummary(summary: { refusals: unknown[] }): string {
  const kept = { ...summary, refusals: [...summary.refusals] };
  let text = JSON.stringify(kept);
  while (Buffer.byteLength(text) > 4096 && kept.refusals.length > 0) {
    kept.refusals.pop();
    text = JSON.stringify(kept);
  }
  return text;
}
