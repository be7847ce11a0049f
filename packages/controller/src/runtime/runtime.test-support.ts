/** Helpers for the runtime's integration suites: a client with injectable faults, log capture, polling. */
import * as k8s from "@kubernetes/client-node";
import { pino, type Logger } from "pino";
import { sharedControlPlane } from "@captf/testkit";
import { builtinTypes } from "./builtin-types.js";
import { KubeClient, type KubeClientOptions, type KubeObject, type Query, type WatchEvent } from "./kube-client.js";

/** A kubeconfig for the shared control plane of this jest run. */
export function planeKubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(sharedControlPlane().kubeconfigPath);
  return kc;
}

/**
 * The real client with faults a test can switch on: rewrite the next watch's resourceVersion (to
 * provoke a real 410 from the server), cut every live watch connection, or swallow watch events
 * (a connection that went silent).
 */
export class FaultyKubeClient extends KubeClient {
  readonly watchQueries: Query[] = [];
  nextWatchResourceVersion: string | undefined;
  swallowWatchEvents = false;
  readonly #live = new Set<AbortController>();

  constructor(kc: k8s.KubeConfig = planeKubeConfig(), options?: KubeClientOptions) {
    super(kc, options);
  }

  override async watch<T extends KubeObject>(
    path: string,
    query: Query,
    onEvent: (event: WatchEvent<T>) => void,
    options: { signal?: AbortSignal; onUnparsable?: (line: string) => void } = {},
  ): Promise<void> {
    const effective = { ...query };
    if (this.nextWatchResourceVersion !== undefined) {
      effective.resourceVersion = this.nextWatchResourceVersion;
      this.nextWatchResourceVersion = undefined;
    }
    this.watchQueries.push(effective);
    const cut = new AbortController();
    this.#live.add(cut);
    const signal = options.signal ? AbortSignal.any([options.signal, cut.signal]) : cut.signal;
    try {
      await super.watch<T>(path, effective, (event) => (this.swallowWatchEvents ? undefined : onEvent(event)), { ...options, signal });
    } finally {
      this.#live.delete(cut);
    }
  }

  /** Cuts every live watch connection, as a network failure would. */
  cutWatches(): number {
    const count = this.#live.size;
    for (const cut of this.#live) cut.abort();
    return count;
  }

  get liveWatches(): number {
    return this.#live.size;
  }
}

export interface CapturedLogs {
  logger: Logger;
  lines: Record<string, unknown>[];
  messages(): string[];
}

/** A real pino logger whose JSON lines land in an array. */
export function captureLogs(level: pino.LevelWithSilent = "debug"): CapturedLogs {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines, messages: () => lines.map((line) => String(line.msg)) };
}

/** Polls `check` every 20 ms until it returns truthy (resolving with it) or `timeoutMillis` passes (throwing its last error). */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMillis = 10_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMillis;
  let lastError: unknown;
  for (;;) {
    try {
      const result = await check();
      if (result) return result;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMillis} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Creates a namespace with a unique name for one suite. */
export async function createTestNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = `${prefix}-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e4).toString(36)}`;
  await client.create(builtinTypes.namespace, undefined, { metadata: { name } });
  return name;
}
