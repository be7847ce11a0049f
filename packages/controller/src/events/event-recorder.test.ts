import { describe, expect, it } from "@jest/globals";
import { fakeClient, type FakeCall } from "../runtime/fake-client.test-support.js";
import { clusterScopedEventNamespace, kubeEventRecorder } from "./event-recorder.js";

describe("kubeEventRecorder", () => {
  const recorded = () => {
    const created: FakeCall[] = [];
    const client = fakeClient({ "create events": (call) => (created.push(call), call.body) });
    return { created, events: kubeEventRecorder(client, { instance: "manager-0", now: () => Date.UTC(2026, 11, 5, 8, 0, 0, 123) }) };
  };

  it("records an events.k8s.io Event in the object's namespace, regarding the object, with a MicroTime", async () => {
    const { created, events } = recorded();
    await events.record(
      { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformMachine", namespace: "team-a", name: "m-1", uid: "u-1" },
      "Provisioned",
      "provisioned",
    );
    expect(created).toHaveLength(1);
    expect(created[0]!.namespace).toBe("team-a");
    expect(created[0]!.body).toMatchObject({
      metadata: { namespace: "team-a", name: expect.stringMatching(/^m-1\.[0-9a-f]+$/) },
      eventTime: "2026-12-05T08:00:00.123000Z",
      reportingController: "captf-manager",
      reportingInstance: "manager-0",
      action: "Provisioned",
      reason: "Provisioned",
      type: "Normal",
      regarding: { kind: "TerraformMachine", namespace: "team-a", name: "m-1", uid: "u-1" },
    });
  });

  it("records a cluster-scoped object's events in the default namespace, regarding no namespace", async () => {
    const { created, events } = recorded();
    await events.record(
      { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformClusterIdentity", name: "aws", uid: "u-2" },
      "IdentitySecretNotFound",
      "Secret creds/aws does not exist",
      "CheckSecret",
      "Warning",
    );
    expect(clusterScopedEventNamespace).toBe("default");
    expect(created[0]!.namespace).toBe("default");
    expect(created[0]!.body).toMatchObject({
      metadata: { namespace: "default" },
      action: "CheckSecret",
      type: "Warning",
      regarding: { kind: "TerraformClusterIdentity", name: "aws", uid: "u-2" },
    });
    expect((created[0]!.body as { regarding: object }).regarding).not.toHaveProperty("namespace");
  });

  it("keeps the event's name valid for an object whose name is at the 253-character limit", async () => {
    const { created, events } = recorded();
    const name = `${"a".repeat(199)}-${"b".repeat(53)}`;
    await events.record({ apiVersion: "v1", kind: "Thing", namespace: "ns", name, uid: "u" }, "Provisioned", "x");
    const eventName = (created[0]!.body as { metadata: { name: string } }).metadata.name;
    expect(eventName.length).toBeLessThanOrEqual(253);
    expect(eventName).toMatch(/^a{199}\.[0-9a-f]+$/);
  });

  it("never fails the caller when the API server refuses the event", async () => {
    const warnings: unknown[] = [];
    const client = fakeClient({
      "create events": () => {
        throw new Error("forbidden");
      },
    });
    const events = kubeEventRecorder(client, { instance: "m", logger: { warn: (...args: unknown[]) => warnings.push(args) } as never });
    await expect(
      events.record({ apiVersion: "v1", kind: "Thing", name: "cluster-wide", uid: "u" }, "Provisioned", "x"),
    ).resolves.toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0])).toContain("cluster-wide");
  });
});
