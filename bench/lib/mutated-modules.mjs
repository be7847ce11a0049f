// Properties of the fuzzed-module drill: a good module of each role, mutated (truncated tokens,
// bad UTF-8, deep nesting, huge files, flipped bytes, spliced text), through `tfcapi-lint module`.
// The linter must not crash: it exits 0, 1 or 2, and 2 (the module does not parse) comes with a
// module/parse finding at a file:line:col inside the module. A mutation that leaves a brace
// unclosed must exit 2. fast-check and the CLI's in-process entry (`main`) are passed in, so the
// drill (bench/drills/fuzz-modules.mjs, built dist/) and the jest test (sources) share these.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The reference modules the mutations start from: role → { file name → bytes }. */
export function seedModules(testdataDir) {
  const root = join(testdataDir, "reference/good");
  const modules = {};
  for (const role of ["cluster", "machine", "machinepool"]) {
    const dir = join(root, role);
    modules[role] = Object.fromEntries(
      readdirSync(dir)
        .filter((name) => /\.tf(\.json)?$/.test(name))
        .map((name) => [name, readFileSync(dir + "/" + name)]),
    );
  }
  return modules;
}

/** Nesting `depth` levels deep in HCL syntax (or JSON for a .tf.json file): recursive parsers overflow their stack here. */
function deeplyNested(kind, depth, json) {
  if (json) return `{"locals": {"deep": ${"[".repeat(depth)}1${"]".repeat(depth)}}}`;
  const [open, close] = {
    list: ["[", "]"],
    object: ["{ a = ", " }"],
    parens: ["(", ")"],
    template: ['"${', '}"'],
    call: ["max(", ")"],
    unary: ["-", ""],
  }[kind];
  return `\nlocals {\n  deep = ${open.repeat(depth)}1${close.repeat(depth)}\n}\n`;
}

/**
 * One mutation of one file. `truncate-brace` drops the last `}` of a native file (never
 * parses); the others may or may not leave a parseable file.
 */
export function moduleMutation(fc, hugeLines = [10_000, 100_000]) {
  return fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant("truncate"), at: fc.nat() }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant("truncate-brace") }) },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("bad-utf8"),
        at: fc.nat(),
        bytes: fc.constantFrom(
          [0xff],
          [0xc3],
          [0xe2, 0x82],
          [0xed, 0xa0, 0x80],
          [0xf8, 0x88, 0x80, 0x80, 0x80],
          [0xc0, 0xaf],
          [0x00],
          [0xef, 0xbb, 0xbf],
        ),
      }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant("flip"), at: fc.nat(), byte: fc.integer({ min: 1, max: 255 }) }) },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("splice"),
        at: fc.nat(),
        text: fc.constantFrom(
          '"',
          "${",
          "%{",
          "<<EOT\n",
          "{",
          "}",
          "[",
          "]",
          "(",
          ")",
          "=",
          "#",
          "/*",
          "*/",
          "\\",
          "\r",
          "\t",
          ",",
          ".",
          "..",
          "...",
          "?",
          ":",
          "=>",
          "0x",
          "1e",
          "\u2028",
          "\u00a0",
          "\ud83d",
          "${var.",
          "for x in",
          "null",
          "\n",
        ),
      }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant("cut"), at: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("deep"),
        nest: fc.constantFrom("list", "object", "parens", "template", "call", "unary"),
        depth: fc.constantFrom(10, 100, 254, 255, 256, 257, 5_000, 100_000),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("huge"), lines: fc.constantFrom(...hugeLines), broken: fc.boolean() }) },
  );
}

/** Applies `mutation` to `bytes` (the file `name`); returns the new bytes and whether they can never parse. */
export function applyMutation(name, bytes, mutation) {
  const json = name.endsWith(".json");
  const at = (n) => (bytes.length === 0 ? 0 : n % (bytes.length + 1));
  switch (mutation.kind) {
    case "truncate":
      return { bytes: bytes.subarray(0, at(mutation.at)), neverParses: false };
    case "truncate-brace": {
      const last = bytes.lastIndexOf(0x7d);
      return last < 0
        ? { bytes, neverParses: false }
        : { bytes: Buffer.concat([bytes.subarray(0, last), bytes.subarray(last + 1)]), neverParses: true };
    }
    case "bad-utf8":
      return {
        bytes: Buffer.concat([bytes.subarray(0, at(mutation.at)), Buffer.from(mutation.bytes), bytes.subarray(at(mutation.at))]),
        neverParses: false,
      };
    case "flip":
      return { bytes: Buffer.from(bytes.map((b, i) => (i === at(mutation.at) ? b ^ mutation.byte : b))), neverParses: false };
    case "splice":
      return {
        bytes: Buffer.concat([bytes.subarray(0, at(mutation.at)), Buffer.from(mutation.text, "utf8"), bytes.subarray(at(mutation.at))]),
        neverParses: false,
      };
    case "cut":
      return {
        bytes: Buffer.concat([bytes.subarray(0, at(mutation.at)), bytes.subarray(at(mutation.at) + mutation.length)]),
        neverParses: false,
      };
    case "deep":
      return {
        bytes: json
          ? Buffer.from(deeplyNested(mutation.nest, mutation.depth, true))
          : Buffer.concat([bytes, Buffer.from(deeplyNested(mutation.nest, mutation.depth, false))]),
        neverParses: false,
      };
    case "huge": {
      if (json) return { bytes, neverParses: false };
      const body = Array.from({ length: mutation.lines }, (_, i) => `  v${i} = "${i}"`).join("\n");
      return {
        bytes: Buffer.concat([bytes, Buffer.from(`\nlocals {\n${body}\n${mutation.broken ? "" : "}\n"}`)]),
        neverParses: mutation.broken,
      };
    }
  }
  throw new Error(`unknown mutation ${mutation.kind}`);
}

/** A role and 1 to 3 mutations, each on one of the module's files. */
export function mutatedModule(fc, hugeLines) {
  return fc.record({
    role: fc.constantFrom("cluster", "machine", "machinepool"),
    mutations: fc.array(fc.tuple(fc.nat(), moduleMutation(fc, hugeLines)), { minLength: 1, maxLength: 3 }),
  });
}

/** Writes the mutated module into `dir` (emptied first); returns the files' bytes and whether it can never parse. */
export function writeMutatedModule(dir, seeds, { role, mutations }) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files = { ...seeds[role] };
  // Per file: whether its mutations leave it never parsing. Only a lone unclosing mutation counts:
  // a second one may undo it (a cut that drops a block's opening line rebalances the braces).
  const unclosed = new Map();
  for (const [pick, mutation] of mutations) {
    const names = Object.keys(files).sort();
    const name = names[pick % names.length];
    const mutated = applyMutation(name, files[name], mutation);
    files[name] = mutated.bytes;
    unclosed.set(name, !unclosed.has(name) && mutated.neverParses && !name.endsWith(".json"));
  }
  const neverParses = [...unclosed.values()].some(Boolean);
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
  return { files, neverParses };
}

/** Why a run's answer breaks the property, or undefined. `stdout` is the JSON report. */
export function verdictProblem(code, stdout, files, neverParses) {
  if (![0, 1, 2].includes(code)) return `exit ${code}`;
  let report;
  try {
    report = JSON.parse(stdout);
  } catch {
    return `stdout is not the JSON report: ${stdout.slice(0, 200)}`;
  }
  const parse = (report.findings ?? []).filter((finding) => finding.id === "module/parse");
  if (code === 2) {
    if (parse.length !== 1) return `exit 2 with ${parse.length} module/parse findings`;
    const { file, line, column } = parse[0];
    const bytes = files[file];
    if (!bytes) return `module/parse names ${JSON.stringify(file)}, not a file of the module`;
    const lines = bytes.toString("utf8").split("\n").length;
    if (!(Number.isInteger(line) && line >= 1 && line <= lines && Number.isInteger(column) && column >= 1))
      return `module/parse at ${file}:${line}:${column}, outside the file (${lines} lines)`;
  } else if (parse.length > 0) return `exit ${code} with a module/parse finding`;
  if (neverParses && code !== 2) return `a module with an unclosed brace exits ${code}`;
  return undefined;
}

/**
 * The drill's property: `main` is tfcapi-lint's CLI entry (`main(argv, io)`), `seeds` from
 * seedModules, `dir` a scratch directory, `hugeLines` the sizes of the huge files (lines).
 * `tally` counts exit codes and mutation kinds.
 */
export function mutatedModuleProperty(fc, { main, seeds, dir, hugeLines }, tally = new Map()) {
  const count = (key) => tally.set(key, (tally.get(key) ?? 0) + 1);
  return fc.asyncProperty(mutatedModule(fc, hugeLines), async (module) => {
    const { files, neverParses } = writeMutatedModule(dir, seeds, module);
    let stdout = "";
    let stderr = "";
    const code = await main(["module", dir, "--role", module.role, "--format", "json"], {
      stdout: { write: (s) => (stdout += s) },
      stderr: { write: (s) => (stderr += s) },
      env: {},
    });
    const problem = verdictProblem(code, stdout, files, neverParses);
    if (problem) throw new Error(`${problem}${stderr ? `; stderr: ${stderr.slice(0, 300)}` : ""}`);
    count(`exit ${code}`);
    for (const [, mutation] of module.mutations) count(`exit ${code} after ${mutation.kind}`);
  });
}
