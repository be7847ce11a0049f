import { describe, expect, it } from "@jest/globals";
import { accepts, parseType, TypeSyntaxError } from "./type-match.js";

describe("parseType", () => {
  it("reads primitives, collections, tuples and objects with optional attributes", () => {
    expect(parseType("string")).toEqual({ kind: "string" });
    expect(parseType(" list( map(number) ) ")).toEqual({ kind: "list", element: { kind: "map", element: { kind: "number" } } });
    expect(parseType("tuple([string, bool])")).toEqual({ kind: "tuple", elements: [{ kind: "string" }, { kind: "bool" }] });
    const object = parseType('object({\n  a = string\n  "b" : optional(number, 3)\n  c = optional(string, "N/A (legacy) {x}")\n})');
    expect(object).toMatchObject({ kind: "object" });
    expect(object.kind === "object" && [...object.attributes]).toEqual([
      ["a", { type: { kind: "string" }, optional: false }],
      ["b", { type: { kind: "number" }, optional: true }],
      ["c", { type: { kind: "string" }, optional: true }],
    ]);
  });

  it.each(["", "strin", "list(string", "object({a = })", "map(string) x", "optional(string)", "object({a = optional(string, [})"])(
    "rejects %j",
    (source) => {
      expect(() => parseType(source)).toThrow(TypeSyntaxError);
    },
  );
});

describe("accepts (declared, given)", () => {
  it.each([
    ["any", "object({a=string})", true],
    ["string", "any", true],
    ["string", "string", true],
    ["string", "number", false],
    ["bool", "string", false],
    ["list(string)", "set(string)", true],
    ["set(string)", "tuple([string, string])", true],
    ["list(string)", "tuple([string, number])", false],
    ["tuple([string])", "list(string)", false],
    ["tuple([string, number])", "tuple([string, number])", true],
    ["tuple([string])", "tuple([string, string])", false],
    ["map(string)", "map(string)", true],
    ["map(number)", "map(string)", false],
    ["map(string)", "object({a=string})", false],
    ["object({name=string})", "object({name=string, namespace=string})", true],
    ["object({name=string, uid=string})", "object({name=string, namespace=string})", false],
    ["object({name=string, uid=optional(string)})", "object({name=string, namespace=string})", true],
    [
      "object({pods=list(string), service_domain=optional(string), api_server_port=optional(number, 6443)})",
      "object({pods=list(string), services=list(string), service_domain=string, api_server_port=number})",
      true,
    ],
    ["object({port=string})", "object({host=string, port=number})", false],
    ["list(object({a=any}))", "list(object({a=string, b=bool}))", true],
  ])("%s accepts %s: %s", (declared, given, expected) => {
    expect(accepts(parseType(declared), parseType(given))).toBe(expected);
  });
});
