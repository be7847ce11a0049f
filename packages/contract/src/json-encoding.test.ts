import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { JsonNumber } from "./inputs.js";
import {
  canonicalJson,
  compareCodePoints,
  encodeJson,
  encodeJsonByWalking,
  JsonSyntaxError,
  NonIntegerNumberError,
  parseJsonExact,
  UnencodableValueError,
} from "./json-encoding.js";

describe("canonicalJson", () => {
  it("sorts keys, writes no whitespace and does not escape HTML", () => {
    expect(canonicalJson({ b: 1, a: ["<&>", true, null], c: { y: -2, x: 0 } })).toBe('{"a":["<&>",true,null],"b":1,"c":{"x":0,"y":-2}}');
  });

  it("escapes strings exactly as Go's encoding/json does", () => {
    expect(canonicalJson('q"b\\s/\n\r\t\b\f\u0001\u001f\u007f')).toBe('"q\\"b\\\\s/\\n\\r\\t\\b\\f\\u0001\\u001f\u007f"');
    expect(canonicalJson("line\u2028para\u2029")).toBe('"line\\u2028para\\u2029"');
    expect(canonicalJson("lone \ud800 and \udc00")).toBe('"lone \ufffd and \ufffd"');
    expect(canonicalJson("pair \ud83d\ude00 é ü")).toBe('"pair \ud83d\ude00 é ü"');
    expect(encodeJson("<a&b>", { numbers: "integer", sortKeys: true, escapeHtml: true })).toBe('"\\u003ca\\u0026b\\u003e"');
  });

  it("orders keys by code point, as Go orders UTF-8 bytes", () => {
    // U+FF5E sorts before U+1F600 in UTF-8 although its UTF-16 unit is larger.
    expect(canonicalJson({ "\ud83d\ude00": 1, "\uff5e": 2, Z: 3, a: 4 })).toBe('{"Z":3,"a":4,"\uff5e":2,"\ud83d\ude00":1}');
  });

  it("keeps integers of any size exactly and refuses fractions and exponents with the JSON path", () => {
    expect(canonicalJson({ n: new JsonNumber("123456789012345678901234567890"), b: 2n ** 70n })).toBe(
      '{"b":1180591620717411303424,"n":123456789012345678901234567890}',
    );
    expect(() => canonicalJson({ x: [2.5] })).toThrow(new NonIntegerNumberError("/x/0"));
    expect(() => canonicalJson({ "a/b": new JsonNumber("1e3") })).toThrow(/a fractional or exponent number at \/a~1b/);
    expect(() => canonicalJson({ x: new JsonNumber("2.0") })).toThrow(NonIntegerNumberError);
    expect(() => canonicalJson(2 ** 60)).toThrow(/beyond 2\^53/);
    expect(canonicalJson(-0)).toBe("0");
  });

  it("keeps any number as written in the any-number mode", () => {
    expect(canonicalJson({ r: 0.5, s: new JsonNumber("1.50"), t: new JsonNumber("1e3") }, "any")).toBe('{"r":0.5,"s":1.50,"t":1e3}');
  });

  it("refuses what JSON cannot carry", () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(UnencodableValueError);
    expect(() => canonicalJson({ f: Number.POSITIVE_INFINITY }, "any")).toThrow(/Infinity at \/f/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/a function at \/f/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow(/a cycle at \/self/);
  });

  it("pretty-prints like json.MarshalIndent, empty containers compact", () => {
    expect(encodeJson({ b: [], a: {}, c: [1, { d: null }] }, { numbers: "any", sortKeys: false, indent: 2 })).toBe(
      '{\n  "b": [],\n  "a": {},\n  "c": [\n    1,\n    {\n      "d": null\n    }\n  ]\n}',
    );
  });
});

const jsonTree = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -1e15, max: 1e15 }),
    fc.string({ unit: "grapheme" }),
    fc.string({ unit: "binary" }),
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(fc.string({ unit: "grapheme", maxLength: 8 }), tie("value"), { maxKeys: 5 }),
  ),
})).value;

function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffleKeys(item, seed + 1));
  if (value && typeof value === "object") {
    const entries = Object.entries(value);
    const rotated = entries
      .slice(seed % (entries.length || 1))
      .concat(entries.slice(0, seed % (entries.length || 1)))
      .reverse();
    return Object.fromEntries(rotated.map(([k, v]) => [k, shuffleKeys(v, seed + 1)]));
  }
  return value;
}

describe("canonicalJson properties", () => {
  it("does not depend on key insertion order", () => {
    fc.assert(fc.property(jsonTree, fc.nat(), (tree, seed) => canonicalJson(tree) === canonicalJson(shuffleKeys(tree, seed))));
  });

  it("is valid JSON that parses back to the same canonical form", () => {
    fc.assert(
      fc.property(jsonTree, (tree) => {
        const text = canonicalJson(tree);
        return canonicalJson(JSON.parse(text)) === text && canonicalJson(parseJsonExact(text)) === text;
      }),
    );
  });

  it("accepts every safe integer and refuses every non-integer", () => {
    fc.assert(fc.property(fc.maxSafeInteger(), (n) => canonicalJson({ n }) === `{"n":${n}}`));
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
        (d) => {
          expect(() => canonicalJson([d])).toThrow(NonIntegerNumberError);
        },
      ),
    );
  });

  it("writes the same bytes on the native fast path as the exact walker", () => {
    const options = fc.record({
      sortKeys: fc.boolean(),
      escapeHtml: fc.boolean(),
      indent: fc.constantFrom(0, 2),
      numbers: fc.constantFrom("integer" as const, "any" as const),
    });
    const withSpecials = fc.oneof(
      jsonTree,
      fc.constantFrom(
        { "10": 1, "9": 2, a: "\u2028" },
        ["\ud800", { "<b>": "&" }],
        { __proto__x: [undefined, 1] },
        { z: 1, y: [new JsonNumber("1.50")] },
      ),
    );
    fc.assert(
      fc.property(withSpecials, options, (tree, opts) => {
        let fast: string | Error;
        let exact: string | Error;
        try {
          fast = encodeJson(tree, opts);
        } catch (error) {
          fast = error as Error;
        }
        try {
          exact = encodeJsonByWalking(tree, opts);
        } catch (error) {
          exact = error as Error;
        }
        expect(fast).toEqual(exact);
      }),
      { numRuns: 500 },
    );
  });

  it("handles deep nesting", () => {
    let deep: unknown = "leaf";
    for (let i = 0; i < 2000; i++) deep = i % 2 ? [deep] : { k: deep };
    const text = canonicalJson(deep);
    expect(text.length).toBe(1000 * '{"k":}'.length + 1000 * "[]".length + '"leaf"'.length);
    expect(canonicalJson(parseJsonExact(text))).toBe(text);
  });
});

describe("parseJsonExact", () => {
  it("keeps numbers JS cannot carry as literals", () => {
    const parsed = parseJsonExact('{"big":12345678901234567890,"f":1.50,"e":1e3,"i":-7}') as Record<string, unknown>;
    expect(parsed.big).toEqual(new JsonNumber("12345678901234567890"));
    expect(parsed.f).toEqual(new JsonNumber("1.50"));
    expect(parsed.e).toEqual(new JsonNumber("1e3"));
    expect(parsed.i).toBe(-7);
  });

  it("parses escapes, nesting and a __proto__ key as plain data", () => {
    const parsed = parseJsonExact(' { "__proto__" : {"x":1}, "s":"a\\u00e9\\ud83d\\ude00\\n\\/" , "l":[true,false,null,[]]} ') as Record<
      string,
      unknown
    >;
    expect(Object.keys(parsed)).toEqual(["__proto__", "s", "l"]);
    expect(parsed.s).toBe("aé\ud83d\ude00\n/");
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it.each(["", "{", '{"a" 1}', "[1,]", "01", "-", '"\\x"', '"a', "tru", "1 2", '"\u0001"', "{1:2}", '"\\u12"'])(
    "rejects %j with an offset and without quoting the input",
    (text) => {
      expect(() => parseJsonExact(text)).toThrow(JsonSyntaxError);
    },
  );
});

describe("compareCodePoints", () => {
  it("agrees with UTF-8 byte order", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (a, b) => {
        const bytes = Buffer.compare(Buffer.from(a.replace(/[\ud800-\udfff]/g, "x")), Buffer.from(b.replace(/[\ud800-\udfff]/g, "x")));
        const points = compareCodePoints(a.replace(/[\ud800-\udfff]/g, "x"), b.replace(/[\ud800-\udfff]/g, "x"));
        return Math.sign(bytes) === Math.sign(points);
      }),
    );
  });
});
