import { describe, expect, it } from "@jest/globals";
import type { InformerHandlers } from "../runtime/informer.js";
import type { KubeObject } from "../runtime/kube-client.js";
import { identitySecretKeys, identitySecretWatches, type SecretWatchSource } from "./secret-watches.js";

const identity = (name: string, secret: string, namespace = "creds"): KubeObject =>
  ({ metadata: { name }, spec: { type: "Secret", secretRef: { name: secret, namespace } } }) as KubeObject;

/** The identity cache (its index over a mutable map, its handlers fired by `update` and `remove`) and the watches started. */
function fakeManager() {
  const identities = new Map<string, KubeObject>();
  const handlers: InformerHandlers<KubeObject>[] = [];
  let index: ((object: KubeObject) => string[]) | undefined;
  const watches = new Set<string>();
  const manager = {
    informer: (_type: unknown, request: { indexes?: Record<string, (object: KubeObject) => string[]> } = {}) => {
      index ??= Object.values(request.indexes ?? {})[0];
      return {
        addHandlers: (added: InformerHandlers<KubeObject>) => void handlers.push(added),
        byIndex: (_name: string, value: string) => [...identities.values()].filter((object) => index!(object).includes(value)),
      };
    },
    objectWatch: (_type: unknown, namespace: string | undefined, name: string) => {
      watches.add(`${namespace}/${name}`);
      return { name } as never;
    },
    releaseObjectWatch: (_type: unknown, namespace: string | undefined, name: string) => void watches.delete(`${namespace}/${name}`),
  } as unknown as SecretWatchSource;
  const update = (object: KubeObject) => {
    const before = identities.get(object.metadata!.name!);
    identities.set(object.metadata!.name!, object);
    for (const handler of handlers)
      if (before) handler.update?.(before, object, { resync: false });
      else handler.add?.(object, { initialList: false });
  };
  const remove = (name: string) => {
    const before = identities.get(name)!;
    identities.delete(name);
    for (const handler of handlers) handler.delete?.(before);
  };
  return { manager, watches, update, remove };
}

describe("identitySecretWatches", () => {
  it("keys an identity by the namespace and name of its Secret", () => {
    expect(identitySecretKeys(identity("a", "s"))).toEqual(["creds/s"]);
    expect(identitySecretKeys({ metadata: { name: "bare" } })).toEqual([]);
  });

  it("watches a Secret an identity names, and stops once none names it (secretRef changed, identity deleted)", () => {
    const { manager, watches, update, remove } = fakeManager();
    const watchOf = identitySecretWatches(manager)!;
    update(identity("a", "s"));
    update(identity("b", "s"));
    expect(watchOf("creds", "s")).toBeDefined();
    expect([...watches]).toEqual(["creds/s"]);
    // Still named by b: kept.
    update(identity("a", "t"));
    expect([...watches]).toEqual(["creds/s"]);
    expect(watchOf("creds", "t")).toBeDefined();
    remove("b");
    expect([...watches]).toEqual(["creds/t"]);
    update(identity("a", "t"));
    expect([...watches]).toEqual(["creds/t"]);
    remove("a");
    expect([...watches]).toEqual([]);
  });

  it("reads live, starting no watch, a Secret no cached identity names (a pass that read the identity before it changed)", () => {
    const { manager, watches, update } = fakeManager();
    const watchOf = identitySecretWatches(manager)!;
    update(identity("a", "t"));
    expect(watchOf("creds", "s")).toBeUndefined();
    expect([...watches]).toEqual([]);
  });

  it("gives no watches to a manager without object watches", () => {
    const { manager } = fakeManager();
    expect(identitySecretWatches({ informer: manager.informer })).toBeUndefined();
  });
});
