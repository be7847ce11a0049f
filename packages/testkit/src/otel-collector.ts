/**
 * A real OpenTelemetry Collector for the tracing suites: tools/otelcol (the upstream OTLP receiver and file exporter, built by
 * tools/install.sh --only otelcol) on a loopback port, its spans read back from the file it writes (docs/tracing.md).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireTool, waitFor } from "./tools.js";

/** One span as the collector received it, its attributes flattened to strings. */
export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, string>;
  /** The status code: 2 is an error. */
  statusCode: number;
}

export interface Collector {
  /** The OTLP/HTTP base URL (the exporters add /v1/traces). */
  endpoint: string;
  /** Every span received so far. */
  spans(): CollectedSpan[];
  /** What the collector wrote, as it wrote it (OTLP/JSON lines): resource attributes included. */
  text(): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpLine {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

function flatten(attributes: OtlpAttribute[] | undefined): Record<string, string> {
  return Object.fromEntries(
    (attributes ?? []).map(({ key, value }) => [key, String(value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue)]),
  );
}

/** The spans of the file exporter's OTLP/JSON lines. Pure. */
export function parseCollectedSpans(text: string): CollectedSpan[] {
  const spans: CollectedSpan[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    for (const resource of (JSON.parse(line) as OtlpLine).resourceSpans ?? []) {
      const service = flatten(resource.resource?.attributes)["service.name"] ?? "";
      for (const scope of resource.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          spans.push({
            service,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? "",
            name: span.name,
            attributes: flatten(span.attributes),
            statusCode: span.status?.code ?? 0,
          });
    }
  }
  return spans;
}

/** Starts the collector on a free loopback port; resolves once it accepts OTLP/HTTP. */
export async function startCollector(): Promise<Collector> {
  const dir = mkdtempSync(join(tmpdir(), "captf-otelcol-"));
  const port = await freePort();
  const file = join(dir, "spans.jsonl");
  const config = [
    "receivers:",
    "  otlp:",
    "    protocols:",
    "      http:",
    `        endpoint: 127.0.0.1:${port}`,
    "exporters:",
    "  file:",
    `    path: ${file}`,
    "    flush_interval: 100ms",
    "service:",
    "  telemetry:",
    "    metrics:",
    "      level: none",
    "    logs:",
    "      level: warn",
    "  pipelines:",
    "    traces:",
    "      receivers: [otlp]",
    "      exporters: [file]",
    "",
  ].join("\n");
  writeFileSync(join(dir, "config.yaml"), config);
  let output = "";
  const child: ChildProcess = spawn(requireTool("otelcol"), ["--config", join(dir, "config.yaml")], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const endpoint = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`otelcol exited ${child.exitCode}: ${output}`);
      const response = await fetch(`${endpoint}/v1/traces`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      }).catch(() => undefined);
      return response?.ok ? true : undefined;
    },
    30_000,
    "the collector to accept OTLP/HTTP",
  );
  return {
    endpoint,
    spans: () => (existsSync(file) ? parseCollectedSpans(readFileSync(file, "utf8")) : []),
    text: () => (existsSync(file) ? readFileSync(file, "utf8") : ""),
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
