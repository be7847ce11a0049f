import { describe, expect, it } from "@jest/globals";
import { boundedObjectName, nameLabelValue } from "./object-names.js";

// Expected digests are sha256sum's of the same strings: the reference's rule (a label value over 63
// characters is the first 16 hex digits of its SHA-256; a name over 253 keeps its start, trimmed of
// trailing dashes and dots, and ends in `-<16 hex>` of the object's name) computed outside this code.
describe("nameLabelValue", () => {
  it("keeps a name of up to 63 characters as it is", () => {
    expect(nameLabelValue("demo")).toBe("demo");
    expect(nameLabelValue("a".repeat(63))).toBe("a".repeat(63));
  });

  it("writes the first 16 hex digits of the SHA-256 of a longer name", () => {
    expect(nameLabelValue("a".repeat(64))).toBe("ffe054fe7ae0cb6d");
    expect(nameLabelValue("b".repeat(253))).toBe("af5a4872cb1f5b20");
  });

  it("is its own fixed point, so a value read back from a label selects the same objects", () => {
    const value = nameLabelValue("c".repeat(253));
    expect(value).toBe("4b4e34eb907bea94");
    expect(nameLabelValue(value)).toBe(value);
  });
});

describe("boundedObjectName", () => {
  it("is prefix and name while they fit 253 characters", () => {
    expect(boundedObjectName("captf-inputs-m-", "m-0")).toBe("captf-inputs-m-m-0");
    const atLimit = "a".repeat(253 - "captf-inputs-mp-".length);
    expect(boundedObjectName("captf-inputs-mp-", atLimit)).toBe(`captf-inputs-mp-${atLimit}`);
  });

  it("keeps the start and appends -<16 hex of the name's SHA-256>, 253 characters in all", () => {
    const name = "x".repeat(253);
    const bounded = boundedObjectName("captf-inputs-mp-", name);
    expect(bounded).toBe(`captf-inputs-mp-${"x".repeat(253 - 16 - 17)}-1329e1bd71a6a7b2`);
    expect(bounded).toHaveLength(253);
  });

  it("trims dashes and dots where the cut lands, so the name stays a DNS subdomain", () => {
    expect(boundedObjectName("captf-inputs-c-", `${"c".repeat(200)}${"-".repeat(60)}`)).toBe(
      `captf-inputs-c-${"c".repeat(200)}-d6f488b5f499f2bb`,
    );
    expect(boundedObjectName("captf-inputs-m-", `${"e".repeat(210)}${".".repeat(40)}fff`)).toBe(
      `captf-inputs-m-${"e".repeat(210)}-b4292889933ae2a3`,
    );
  });
});
