import { describe, expect, it } from "@jest/globals";
import {
  annotations,
  conditionReasons,
  conditionsNeverInReady,
  finalizers,
  kinds,
  labels,
  managerEventReasons,
  negativePolarityConditions,
} from "./api.js";

describe("API constants", () => {
  it("give every condition reason once per type and in PascalCase", () => {
    for (const [type, byStatus] of Object.entries(conditionReasons)) {
      const all = [...byStatus.True, ...byStatus.False, ...byStatus.Unknown];
      expect([type, new Set(all).size]).toEqual([type, all.length]);
      for (const reason of all) expect(reason).toMatch(/^[A-Z][A-Za-z]*$/);
    }
  });

  it("list only known condition types as informational or negative", () => {
    for (const type of [...conditionsNeverInReady, ...negativePolarityConditions]) expect(Object.keys(conditionReasons)).toContain(type);
  });

  it("use unique annotation and label keys that are valid Kubernetes qualified names", () => {
    for (const table of [annotations, labels]) {
      const values = Object.values(table);
      expect(new Set(values).size).toBe(values.length);
      for (const key of values) expect(key).toMatch(/^([a-z0-9.-]+\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/);
    }
  });

  it("give a finalizer to exactly the three kinds that run Jobs", () => {
    expect(Object.keys(finalizers).sort()).toEqual([kinds.cluster, kinds.machine, kinds.machinePool].sort());
    expect(managerEventReasons.DestructivePlanBlocked).toBe("Warning");
  });
});
