import { describe, expect, it } from "@jest/globals";
import { sourceChanged, variablesSourceKeys } from "./variables-source-watches.js";

describe("variablesSourceKeys", () => {
  it("names each ConfigMap and Secret of spec.variablesFrom in the object's namespace", () => {
    const object = {
      metadata: { namespace: "team", name: "c1" },
      spec: {
        variablesFrom: [{ configMapRef: { name: "settings" } }, { secretRef: { name: "creds" }, optional: true }, { optional: true }],
      },
    };
    expect(variablesSourceKeys(object)).toEqual(["team/ConfigMap/settings", "team/Secret/creds"]);
    expect(variablesSourceKeys({ metadata: { namespace: "team", name: "c2" } })).toEqual([]);
  });
});

describe("sourceChanged", () => {
  const at = (resourceVersion: string) => ({ metadata: { name: "settings", resourceVersion } });

  it("lets every add, delete and real update through, and drops a resync", () => {
    expect([
      sourceChanged(at("1"), "add"),
      sourceChanged(at("1"), "delete"),
      sourceChanged(at("2"), "update", at("1")),
      sourceChanged(at("1"), "update", at("1")),
    ]).toEqual([true, true, true, false]);
  });
});
