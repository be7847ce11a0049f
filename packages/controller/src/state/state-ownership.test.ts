import { describe, expect, it } from "@jest/globals";
import { adoptionDue, chunksMissingOwner, stateChunks, stateOwnerReference } from "./state-ownership.js";

const suffix = "0123456789abcdef-c";
const secret = (name: string, uids: string[] = []) => ({
  metadata: { name, ownerReferences: uids.map((uid) => ({ apiVersion: "v1", kind: "K", name: "n", uid })) },
});

describe("state ownership", () => {
  it("takes the base Secret and its -part-N chunks, nothing else the selector lists", () => {
    const listed = [
      secret(`tfstate-default-${suffix}`),
      secret(`tfstate-default-${suffix}-part-1`),
      secret(`tfstate-default-${suffix}-part-x`),
      secret(`tfstate-default-${suffix}x`),
      secret("other"),
    ];
    expect(stateChunks(suffix, listed).map((s) => s.metadata.name)).toEqual([
      `tfstate-default-${suffix}`,
      `tfstate-default-${suffix}-part-1`,
    ]);
  });

  it("finds the chunks that do not reference the owner's UID", () => {
    const listed = [
      secret(`tfstate-default-${suffix}`, ["me"]),
      secret(`tfstate-default-${suffix}-part-1`, ["someone-else"]),
      secret(`tfstate-default-${suffix}-part-2`),
    ];
    expect(chunksMissingOwner(suffix, listed, "me").map((s) => s.metadata.name)).toEqual([
      `tfstate-default-${suffix}-part-1`,
      `tfstate-default-${suffix}-part-2`,
    ]);
  });

  it("adopts only for a Job hash the base Secret does not hold yet", () => {
    expect(adoptionDue("h2:a", undefined)).toBe(true);
    expect(adoptionDue("h2:a", "h2:b")).toBe(true);
    expect(adoptionDue("h2:a", "h2:a")).toBe(false);
    expect(adoptionDue(undefined, "h2:a")).toBe(false);
  });

  it("references the owner as no controller, blocking nothing", () => {
    expect(stateOwnerReference({ apiVersion: "g/v", kind: "K", name: "n", uid: "u" })).toEqual({
      apiVersion: "g/v",
      kind: "K",
      name: "n",
      uid: "u",
      controller: false,
    });
  });
});
