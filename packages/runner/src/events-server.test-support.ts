import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";

/** An events.k8s.io/v1 Event as a client posted it: the fields the tests read, and the rest unread. */
export interface PostedEvent {
  metadata: { name: string; namespace?: string };
  reason: string;
  note: string;
  action: string;
  type: string;
  eventTime: string;
  [field: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: PostedEvent;
}

export interface EventsServer {
  url: string;
  requests: RecordedRequest[];
  /** Every request body as received, for leak checks. */
  rawBodies: string[];
  /** Every connection a client opened, in order. */
  connections: Socket[];
  close(): Promise<void>;
}

/** What the fake API server answers: a status code, or "hang" to never answer. */
export type Answer = number | "hang";

/** A local stand-in for the API server's events endpoint that records what it is sent. */
export async function startEventsServer(
  options: {
    answer?: (index: number) => Answer;
    tls?: { key: string; cert: string };
    /** How long the server keeps an unused connection open; 0 never closes it. Default Node's (5 s). */
    keepAliveTimeoutMillis?: number;
  } = {},
): Promise<EventsServer> {
  const connections: Socket[] = [];
  const requests: RecordedRequest[] = [];
  const rawBodies: string[] = [];
  const hanging: ServerResponse[] = [];
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    let raw = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (raw += chunk));
    request.on("end", () => {
      const index = requests.length;
      rawBodies.push(raw);
      requests.push({
        method: request.method ?? "",
        path: request.url ?? "",
        authorization: request.headers.authorization,
        body: JSON.parse(raw) as PostedEvent,
      });
      const answer = options.answer?.(index) ?? 201;
      if (answer === "hang") {
        hanging.push(response);
        return;
      }
      response.writeHead(answer, { "Content-Type": "application/json" });
      response.end(raw);
    });
  };
  const server = options.tls ? createHttpsServer(options.tls, handler) : createHttpServer(handler);
  if (options.keepAliveTimeoutMillis !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMillis;
  server.on("connection", (socket: Socket) => connections.push(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? "https" : "http"}://127.0.0.1:${port}`,
    requests,
    rawBodies,
    connections,
    close: () =>
      new Promise((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
