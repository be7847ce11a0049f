/**
 * An HTTP server that answers no request until it is released: the URL the no-op machine's
 * `hold_apply_url` reads a state from. A run that reads it waits mid-step on something the e2e
 * controls, so the e2e can interrupt it without racing it.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** An empty state: what the http backend must be answered for the run to go on (a 404 fails it). */
const emptyState = JSON.stringify({
  version: 4,
  terraform_version: "1.5.7",
  serial: 1,
  lineage: "00000000-0000-4000-8000-000000000000",
  outputs: {},
  resources: [],
});

export interface HoldServer {
  /** For `hold_apply_url`: on loopback, which the plane's Pods share with the host. */
  url: string;
  /** How many requests arrived so far, held or answered. */
  readonly requests: number;
  /** Answers every held request, and every later one at once. */
  release(): void;
  close(): Promise<void>;
}

export async function startHoldServer(): Promise<HoldServer> {
  const held: ServerResponse[] = [];
  let released = false;
  let requests = 0;
  const answer = (response: ServerResponse) => response.writeHead(200, { "Content-Type": "application/json" }).end(emptyState);
  const server = createServer((_request, response) => {
    requests++;
    if (released) answer(response);
    else held.push(response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hold`,
    get requests() {
      return requests;
    },
    release() {
      released = true;
      for (const response of held.splice(0)) answer(response);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
