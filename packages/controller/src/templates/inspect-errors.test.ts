// captf_image_inspect_errors_total by reason, as the template controller counts the failures of the real inspector (the
// registry client over HTTP) against a registry on this machine: one refusing access, one not listening, and a reference
// that names no image.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { Registry } from "prom-client";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { fakeClient } from "../runtime/fake-client.test-support.js";
import { machineTemplateController } from "./template-controller.js";

const namespace = "ns";

/** A registry that answers every request 401 without saying how to authenticate. */
let refusing: Server;
/** A port nothing listens on. */
let closedPort: number;

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
};

beforeAll(async () => {
  refusing = createServer((_request, response) => response.writeHead(401).end());
  await listen(refusing);
  const closed = createServer();
  closedPort = await listen(closed);
  await new Promise((resolve) => closed.close(resolve));
});
afterAll(() => new Promise((resolve) => refusing.close(resolve)));

/** One pass of the template controller over a template of `image`; the registry its counts went to. */
async function inspectTemplateOf(image: string): Promise<{ registry: Registry; recorded: string[]; conditions: unknown }> {
  const registry = new Registry();
  const recorded: string[] = [];
  let status: unknown;
  const template = {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "TerraformMachineTemplate",
    metadata: { name: "t", namespace, uid: "uid-t", generation: 1 },
    spec: { template: { spec: { source: { image } } } },
  };
  const client = fakeClient({
    "get terraformmachinetemplates": () => template,
    "patchStatus terraformmachinetemplates": (call) => {
      status = (call.body as { status?: unknown }).status;
      return template;
    },
  });
  const controller = machineTemplateController(
    {
      client,
      metrics: new CaptfMetrics(registry),
      events: {
        record: async (_subject, reason) => {
          recorded.push(reason);
        },
      },
    },
    { now: () => Date.parse("2026-12-07T10:00:00Z") },
  );
  await controller.reconcile(`${namespace}/t`, {
    namespace,
    name: "t",
    reconcileId: "test",
    logger: pino({ level: "silent" }),
    signal: new AbortController().signal,
  });
  return { registry, recorded, conditions: (status as { conditions?: unknown } | undefined)?.conditions };
}

/** What is wrong, the image (a port known once the servers listen), the reason counted. */
type InspectFailure = [string, () => string, { reason: string }];

describe("failures to inspect a template's image", () => {
  it.each<InspectFailure>([
    [
      "a registry refusing access is unauthorized",
      () => `127.0.0.1:${(refusing.address() as AddressInfo).port}/captf/machine:v1`,
      { reason: "unauthorized" },
    ],
    ["a registry that does not answer is unreachable", () => `127.0.0.1:${closedPort}/captf/machine:v1`, { reason: "unreachable" }],
    ["a reference that is not an image reference is invalid", () => "127.0.0.1:5000/Captf/Machine:v1", { reason: "invalid" }],
  ])("%s", async (_what, image, labels) => {
    const { registry, recorded, conditions } = await inspectTemplateOf(image());
    expect(await seriesValue(registry, "captf_image_inspect_errors_total", labels)).toBe(1);
    // Counted once, under that reason only.
    expect(await seriesValue(registry, "captf_image_inspect_errors_total")).toBe(1);
    expect(recorded).toEqual(["ImageInspectFailed"]);
    expect(conditions).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: "CapacityResolved", status: "False", reason: "ImageInspectFailed" })]),
    );
  });
});
