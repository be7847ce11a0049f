// `restore -o json` with a fake API: the document a program reads for each outcome (written now,
// written without its event, in place already) and nothing on stdout for a refusal. The real API
// server's side (the annotation, the event, main's stderr and exit code) is in plugin.integration.test.ts.
import { describe, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { annotations, kinds } from "@captf/contract/api";
import { requestRestore, type RestoreRequest } from "./commands.js";
import type { Connection } from "./kube.js";
import { Refusal, type CaptfObject } from "./objects.js";

function fakeConnection(object: Omit<CaptfObject, "kind">, eventsAllowed = true) {
  const patches: unknown[] = [];
  const events: { reason: string; note: string }[] = [];
  const connection = {
    namespace: "team-a",
    objects: {
      getNamespacedCustomObject: async () => object,
      patchNamespacedCustomObject: async (request: { body: { metadata: { annotations: Record<string, string> } } }) => {
        patches.push(request.body);
        return {
          ...object,
          metadata: { ...object.metadata, annotations: { ...object.metadata.annotations, ...request.body.metadata.annotations } },
        };
      },
    },
    authentication: { createSelfSubjectReview: async () => ({ status: { userInfo: { username: "alice" } } }) },
    events: {
      createNamespacedEvent: async (request: { body: { reason: string; note: string } }) => {
        if (!eventsAllowed) throw new k8s.ApiException(403, "Forbidden", '{"kind":"Status","reason":"Forbidden"}', {});
        events.push({ reason: request.body.reason, note: request.body.note });
        return {};
      },
    },
  } as unknown as Connection;
  return { connection, patches, events };
}

const withBackups = (annotationValues?: Record<string, string>): Omit<CaptfObject, "kind"> => ({
  metadata: { name: "demo", namespace: "team-a", resourceVersion: "7", ...(annotationValues ? { annotations: annotationValues } : {}) },
  status: { stateBackups: [{ serial: 3, takenAt: "2026-12-01T09:00:00Z", bytes: 512 }] },
});

async function restoreAsJson(connection: Connection, serial: number): Promise<string> {
  let out = "";
  await requestRestore(connection, { kind: kinds.cluster, name: "demo" }, serial, "json", { write: (text: string) => (out += text) });
  return out;
}

/** The document `restore -o json` prints, as its exact text. */
const document = (request: RestoreRequest) => `${JSON.stringify(request, null, 2)}\n`;

describe("restore -o json", () => {
  it("prints the object, the serial, that it wrote the request and recorded the event, and the condition to watch", async () => {
    const { connection, patches, events } = fakeConnection(withBackups());
    expect(await restoreAsJson(connection, 3)).toBe(
      document({
        object: { kind: kinds.cluster, namespace: "team-a", name: "demo" },
        serial: 3,
        written: true,
        event: true,
        watch: "RestoreJobSucceeded",
      }),
    );
    expect(patches).toEqual([{ metadata: { resourceVersion: "7", annotations: { [annotations.restoreState]: "3" } } }]);
    expect(events).toEqual([{ reason: "StateRestoreRequested", note: "restore of state serial 3 requested by alice with kubectl captf" }]);
  });

  it("says event false when the user may not create events, the request written all the same", async () => {
    const { connection, patches } = fakeConnection(withBackups(), false);
    expect(JSON.parse(await restoreAsJson(connection, 3))).toEqual({
      object: { kind: kinds.cluster, namespace: "team-a", name: "demo" },
      serial: 3,
      written: true,
      event: false,
      watch: "RestoreJobSucceeded",
    });
    expect(patches).toHaveLength(1);
  });

  it("says written false, and records no event, when the same serial is requested already", async () => {
    const { connection, patches, events } = fakeConnection(withBackups({ [annotations.restoreState]: "3" }));
    expect(JSON.parse(await restoreAsJson(connection, 3))).toEqual({
      object: { kind: kinds.cluster, namespace: "team-a", name: "demo" },
      serial: 3,
      written: false,
      event: false,
      watch: "RestoreJobSucceeded",
    });
    expect([patches, events]).toEqual([[], []]);
  });

  it("prints nothing for a serial without a backup: the refusal is main's to report", async () => {
    const { connection, patches } = fakeConnection(withBackups());
    let out = "";
    await expect(
      requestRestore(connection, { kind: kinds.cluster, name: "demo" }, 4, "json", { write: (text: string) => (out += text) }),
    ).rejects.toThrow(new Refusal("TerraformCluster team-a/demo has no backup of serial 4 in status.stateBackups (it lists 3)"));
    expect([out, patches]).toEqual(["", []]);
  });
});
