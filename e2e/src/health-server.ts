/**
 * What the no-op machine's `health_state_url` reads: per object name, a state whose `health` output
 * says what a real module would observe of its instance, and whose `observed` output stands in for
 * anything else it reads of the world (a change is drift). Module code holds no Kubernetes credential,
 * so the e2e answers it over HTTP on loopback, which the plane's Pods share with the host.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface ObservedHealth {
  state: string;
  healthy: boolean;
  message: string;
  reasons: string[];
}

export interface HealthServer {
  /** For `health_state_url`: the module asks `<url>/<object name>`. */
  url: string;
  /** What the module observes of `name`'s instance from now on. */
  set(name: string, health: ObservedHealth): void;
  /** What the module reads as `observed` of `name` from now on. */
  observe(name: string, value: string): void;
  /** Forgets what was set of `name`: the module observes its default again. */
  reset(name: string): void;
  close(): Promise<void>;
}

/** A state of the http backend; with no `health` output the module reports its instance running and healthy. */
function stateDocument(health: ObservedHealth | undefined, observed: string | undefined): string {
  const outputs = {
    ...(health
      ? {
          health: { value: health, type: ["object", { state: "string", healthy: "bool", message: "string", reasons: ["list", "string"] }] },
        }
      : {}),
    ...(observed !== undefined ? { observed: { value: observed, type: "string" } } : {}),
  };
  return JSON.stringify({
    version: 4,
    terraform_version: "1.12.6",
    serial: 1,
    lineage: "00000000-0000-4000-8000-00000000e2e0",
    outputs,
    resources: [],
  });
}

export async function startHealthServer(): Promise<HealthServer> {
  const healths = new Map<string, ObservedHealth>();
  const values = new Map<string, string>();
  const server = createServer((request, response) => {
    const name = decodeURIComponent((request.url ?? "").replace(/^\/health\//, ""));
    response.writeHead(200, { "Content-Type": "application/json" }).end(stateDocument(healths.get(name), values.get(name)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/health`,
    set: (name, health) => void healths.set(name, health),
    observe: (name, value) => void values.set(name, value),
    reset: (name) => {
      healths.delete(name);
      values.delete(name);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
