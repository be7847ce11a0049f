import { describe, expect, it } from "@jest/globals";
import { brokerScope, checkBody, decideRequest, isStateSecretName, narrowListQuery, narrowSecretList } from "./policy.js";

const object = {
  apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
  kind: "TerraformMachine",
  namespace: "team-a",
  name: "m-1",
  uid: "u-1",
};
const scope = brokerScope(object, "abc-m");
const state = "tfstate-default-abc-m";
const lock = "lock-tfstate-default-abc-m";
const q = (text = "") => new URLSearchParams(text);
const secret = (name: string) => `/api/v1/namespaces/team-a/secrets/${name}`;
const lease = (name: string) => `/apis/coordination.k8s.io/v1/namespaces/team-a/leases/${name}`;

describe("the broker's scope", () => {
  it("names the object's state Secret, its chunks and its lock", () => {
    expect(scope).toMatchObject({ namespace: "team-a", stateSecret: state, lockLease: lock });
    expect(isStateSecretName(scope, state)).toBe(true);
    expect(isStateSecretName(scope, `${state}-part-1`)).toBe(true);
    expect(isStateSecretName(scope, `${state}-part-01`)).toBe(false);
    expect(isStateSecretName(scope, `${state}-part-`)).toBe(false);
    expect(isStateSecretName(scope, `${state}x`)).toBe(false);
    expect(isStateSecretName(scope, "tfstate-default-abd-m")).toBe(false);
  });
});

describe("decideRequest", () => {
  const allowed: [string, string, string][] = [
    ["GET", secret(state), ""],
    ["GET", secret(`${state}-part-2`), ""],
    ["PUT", secret(state), ""],
    ["POST", "/api/v1/namespaces/team-a/secrets", ""],
    ["GET", "/api/v1/namespaces/team-a/secrets", "labelSelector=tfstate%3Dtrue"],
    ["GET", lease(lock), ""],
    ["PUT", lease(lock), ""],
    ["POST", "/apis/coordination.k8s.io/v1/namespaces/team-a/leases", ""],
    ["POST", "/apis/events.k8s.io/v1/namespaces/team-a/events", ""],
  ];
  it.each(allowed)("allows %s %s", (method, path, query) => {
    expect(decideRequest(scope, method, path, q(query)).allowed).toBe(true);
  });

  const refused: [string, string, string, RegExp][] = [
    ["GET", secret("demo-kubeconfig"), "", /not this object's state/],
    ["GET", secret("demo-ca"), "", /not this object's state/],
    ["GET", secret("tfstate-default-other-m"), "", /not this object's state/],
    ["PUT", secret("tfstate-default-other-m"), "", /not this object's state/],
    ["DELETE", secret("tfstate-default-other-m"), "", /not this object's state/],
    ["PATCH", secret(state), "", /PATCH on the state Secret/],
    ["DELETE", secret(state), "", /DELETE on the state Secret/],
    ["DELETE", secret(`${state}-part-3`), "", /DELETE on the state Secret/],
    ["GET", "/api/v1/namespaces/other/secrets/" + state, "", /namespace other/],
    ["GET", "/api/v1/secrets", "", /not a request of the state backend/],
    ["GET", "/api/v1/namespaces/team-a/secrets", "watch=true", /watches/],
    ["DELETE", "/api/v1/namespaces/team-a/secrets", "", /collection/],
    ["DELETE", lease(lock), "", /DELETE on the state lock/],
    ["GET", lease("lock-tfstate-default-other-m"), "", /not this object's state lock/],
    ["GET", "/apis/coordination.k8s.io/v1/namespaces/team-a/leases", "", /collection/],
    ["POST", "/api/v1/namespaces/team-a/pods", "", /not a request of the state backend/],
    ["POST", "/apis/batch/v1/namespaces/team-a/jobs", "", /not a request of the state backend/],
    ["POST", "/api/v1/namespaces/team-a/events", "", /not a request of the state backend/],
    ["POST", "/apis/events.k8s.io/v1/namespaces/other/events", "", /namespace other/],
    ["GET", "/apis/events.k8s.io/v1/namespaces/team-a/events", "", /GET on events/],
    ["GET", `/api/v1/namespaces/team-a/secrets/${state}%2F..%2Fdemo-kubeconfig`, "", /plain/],
    ["GET", `/api/v1/namespaces/team-a/secrets/../secrets/demo-kubeconfig`, "", /plain/],
    ["GET", "/version", "", /not a request of the state backend/],
  ];
  it.each(refused)("refuses %s %s?%s", (method, path, query, why) => {
    const decision = decideRequest(scope, method, path, q(query));
    expect(decision.allowed).toBe(false);
    expect(decision.allowed === false && decision.why).toMatch(why);
  });

  it("checks bodies where the path alone cannot tell", () => {
    expect(decideRequest(scope, "POST", "/api/v1/namespaces/team-a/secrets", q())).toMatchObject({ bodyCheck: "state-name" });
    expect(decideRequest(scope, "PUT", lease(lock), q())).toMatchObject({ bodyCheck: "lock-name" });
    expect(decideRequest(scope, "POST", "/apis/events.k8s.io/v1/namespaces/team-a/events", q())).toMatchObject({
      bodyCheck: "event-regarding",
    });
    expect(decideRequest(scope, "GET", "/api/v1/namespaces/team-a/secrets", q())).toMatchObject({ filterList: true });
  });
});

describe("checkBody", () => {
  it("lets a Secret or Lease through only under this object's names and namespace", () => {
    expect(checkBody(scope, "state-name", { kind: "Secret", metadata: { name: state, namespace: "team-a" } })).toBeUndefined();
    expect(checkBody(scope, "state-name", { metadata: { name: `${state}-part-1` } })).toBeUndefined();
    expect(checkBody(scope, "state-name", { metadata: { name: "demo-kubeconfig" } })).toMatch(/not this object's state/);
    expect(checkBody(scope, "state-name", { metadata: { name: state, namespace: "other" } })).toMatch(/namespace other/);
    expect(checkBody(scope, "state-name", { kind: "ConfigMap", metadata: { name: state } })).toMatch(/not a Secret/);
    expect(checkBody(scope, "state-name", { metadata: { name: state } }, `${state}-part-1`)).toMatch(/the path/);
    expect(checkBody(scope, "lock-name", { metadata: { name: lock } })).toBeUndefined();
    expect(checkBody(scope, "lock-name", { metadata: { name: "lock-tfstate-default-x-m" } })).toMatch(/not this object's state lock/);
    expect(checkBody(scope, "state-name", [])).toMatch(/not a JSON object/);
    expect(checkBody(scope, "state-name", { metadata: {} })).toMatch(/names no object/);
  });

  it("lets an event through only about this object", () => {
    expect(checkBody(scope, "event-regarding", { metadata: { name: "e" }, regarding: { ...object } })).toBeUndefined();
    expect(checkBody(scope, "event-regarding", { metadata: { name: "e" }, regarding: { ...object, name: "m-2" } })).toMatch(
      /not this run's object/,
    );
    expect(checkBody(scope, "event-regarding", { metadata: { name: "e" }, regarding: { ...object, uid: "u-2" } })).toMatch(
      /not this run's object/,
    );
    expect(checkBody(scope, "event-regarding", { metadata: { name: "e" } })).toMatch(/about nothing/);
  });
});

describe("narrowListQuery", () => {
  it("asks for this object's suffix beside the backend's own selector", () => {
    expect(narrowListQuery(scope, q("labelSelector=tfstate%3Dtrue&limit=500")).toString()).toBe(
      "labelSelector=tfstate%3Dtrue%2CtfstateSecretSuffix%3Dabc-m&limit=500",
    );
    expect(narrowListQuery(scope, q()).get("labelSelector")).toBe("tfstateSecretSuffix=abc-m");
  });
});

describe("narrowSecretList", () => {
  it("keeps only this object's state Secrets of a list", () => {
    const items = [state, `${state}-part-1`, "demo-kubeconfig", "tfstate-default-other-m"].map((name) => ({
      metadata: { name },
      data: { x: "eA==" },
    }));
    expect(
      (narrowSecretList(scope, { kind: "SecretList", items }) as { items: { metadata: { name: string } }[] }).items.map(
        (item) => item.metadata.name,
      ),
    ).toEqual([state, `${state}-part-1`]);
  });
});
