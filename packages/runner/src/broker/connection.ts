import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ApiEndpoint } from "../events.js";

/** The broker's kubeconfig file name in its directory (server.ts writes it). */
export const brokerKubeconfigFile = "kubeconfig";

/** How often the runner looks for the broker's kubeconfig while the sidecar starts. */
const pollMs = 2;

/**
 * The broker's address from the kubeconfig it wrote, and the run's token (its first path segment, a secret to redact);
 * undefined while it is not there.
 */
export function readBrokerEndpoint(dir: string): { endpoint: ApiEndpoint; token: string } | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, brokerKubeconfigFile), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const config = JSON.parse(text) as { clusters?: { cluster?: { server?: string } }[] };
  const server = config.clusters?.[0]?.cluster?.server;
  const token = server ? /^http:\/\/[^/]+\/([0-9a-f]{64})$/.exec(server)?.[1] : undefined;
  if (!server || !token) throw new Error(`${join(dir, brokerKubeconfigFile)} names no broker server with its token`);
  return { endpoint: { server }, token };
}

/**
 * Waits until the broker sidecar has written its kubeconfig: the Job's containers start together,
 * and the backend's first request comes at init. Throws after `timeoutMs` or when stopped.
 */
export async function waitForBroker(
  dir: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ endpoint: ApiEndpoint; token: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const broker = readBrokerEndpoint(dir);
    if (broker) return broker;
    if (signal?.aborted) throw new Error("stopped while waiting for the state broker");
    if (Date.now() >= deadline)
      throw new Error(
        `the state broker wrote no ${join(dir, brokerKubeconfigFile)} within ${Math.round(timeoutMs / 1000)}s: see the Pod's ` +
          `broker container`,
      );
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
