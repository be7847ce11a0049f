// Properties of the fuzzed-output drill: mutated contract output documents through decodeOutputs,
// and mutated state documents and Secrets through the state reader. Neither may throw: a broken
// document is a returned verdict with a message. The code under test and fast-check are passed in,
// so the drill (bench/drills/fuzz-outputs.mjs, built dist/) and the jest test (sources) share these.
import { gzipSync } from "node:zlib";

/** Valid output documents of each role, the seeds the mutations start from. */
const seeds = {
  cluster: {
    control_plane_endpoint: { host: "api.example.com", port: 6443 },
    failure_domains: [{ name: "fd1", control_plane: true, attributes: { zone: "a" } }],
    exports: { vpc: "v-1", mtu: 1500, nested: { list: [1, "two", null] } },
    health: { state: "running", healthy: true },
  },
  machine: {
    provider_id: "noop:///ns/m",
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
    failure_domain: "fd1",
    interruptible: false,
    health: { state: "running", healthy: true, message: null, reasons: [] },
  },
  machinepool: {
    provider_id: "group-1",
    provider_id_list: ["p/0", "p/1"],
    replicas: 2,
    instances: [{ provider_id: "p/0" }, { provider_id: "p/1", state: "running", addresses: [{ type: "Hostname", address: "h" }] }],
    health: { state: "degraded", healthy: false, reasons: ["x"] },
  },
};
export const roles = Object.keys(seeds);

/** A value nested `depth` levels deep in arrays or objects: recursion is where decoders crash. */
function nested(depth, asObject) {
  let value = "leaf";
  for (let i = 0; i < depth; i++) value = asObject ? { n: value } : [value];
  return value;
}

/** JSON values toward the edges: numbers at the limits of doubles and integers, odd strings, deep nesting. */
export function edgeValue(fc) {
  return fc.oneof(
    fc.constantFrom(
      null,
      true,
      false,
      0,
      -0,
      1,
      -1,
      1.5,
      1e21,
      1e308,
      -1e308,
      5e-324,
      2 ** 53,
      2 ** 53 + 2,
      2 ** 31,
      -(2 ** 31) - 1,
      65536,
      "",
    ),
    fc.constantFrom("\u0000", "\ud800", "\udfff", "é", "💥", "a".repeat(70_000), " ", "__proto__", "constructor", "toString", "-1", "1e3"),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.integer({ min: 1, max: 2_000 }).chain((depth) => fc.boolean().map((asObject) => nested(depth, asObject))),
    fc.jsonValue({ maxDepth: 4 }),
    // Lists around the pool's 1000-instance cut, built rather than generated (generation is slow).
    fc
      .tuple(fc.integer({ min: 998, max: 1002 }), fc.jsonValue({ maxDepth: 1 }))
      .map(([length, item]) => Array.from({ length }, (_, i) => (i % 2 ? item : { provider_id: `p/${i}` }))),
  );
}

/** A shallow copy of an array or object. */
const shallow = (node) => (Array.isArray(node) ? [...node] : { ...node });

/** Replaces, removes or adds what sits at a random path of `document`; copies only along the path (values may be deep). */
function mutateAt(document, path, action, value, key) {
  if (document === null || typeof document !== "object") return action === "replace" ? value : document;
  const root = shallow(document);
  let parent = null;
  let slot = null;
  let node = root;
  for (const step of path) {
    if (node === null || typeof node !== "object") break;
    const keys = Object.keys(node);
    if (keys.length === 0) break;
    if (parent !== null) parent[slot] = node = shallow(node);
    parent = node;
    slot = keys[step % keys.length];
    node = node[slot];
  }
  if (parent === null) return action === "replace" ? value : root;
  if (action === "replace") parent[slot] = value;
  else if (action === "remove") {
    if (Array.isArray(parent)) parent.splice(Number(slot), 1);
    else delete parent[slot];
  } else if (node && typeof node === "object") {
    const grown = (parent[slot] = shallow(node));
    if (Array.isArray(grown)) grown.push(value);
    else Object.defineProperty(grown, key, { value, enumerable: true, writable: true, configurable: true });
  } else parent[slot] = value;
  return root;
}

/** A seed document with 1 to 4 mutations toward the edges; sometimes not a document at all. */
export function mutatedOutputs(fc, role) {
  const mutation = fc.tuple(
    fc.array(fc.nat(), { maxLength: 5 }),
    fc.constantFrom("replace", "remove", "add"),
    edgeValue(fc),
    fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("__proto__", "health", "provider_id")),
  );
  return fc.oneof(
    {
      weight: 9,
      arbitrary: fc
        .array(mutation, { minLength: 1, maxLength: 4 })
        .map((mutations) =>
          mutations.reduce((document, [path, action, value, key]) => mutateAt(document, path, action, value, key), seeds[role]),
        ),
    },
    { weight: 1, arbitrary: edgeValue(fc) },
  );
}

/** How a state document travels: one gzip Secret, or chunked, and what damage it takes on the way. */
const secretDamage = ["none", "flip", "truncate", "drop-chunk", "rename-chunk", "not-base64", "no-tfstate", "duplicate-chunk", "empty"];

/** A state document (version 4, its outputs mutated) or something else entirely, as JSON text or raw bytes. */
function stateText(fc) {
  const outputsEntry = (value) => ({ value, type: "string", sensitive: false });
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .tuple(fc.constantFrom(...roles), fc.nat())
        .chain(([role]) => mutatedOutputs(fc, role))
        .chain((outputs) =>
          fc
            .record({
              version: fc.oneof({ weight: 8, arbitrary: fc.constant(4) }, { weight: 1, arbitrary: edgeValue(fc) }),
              serial: fc.oneof(fc.nat(), edgeValue(fc)),
              lineage: fc.oneof(fc.uuid(), edgeValue(fc)),
              terraform_version: fc.oneof(fc.constant("1.10.7"), edgeValue(fc)),
              outputs: fc.oneof(
                {
                  weight: 6,
                  arbitrary: fc.constant(
                    outputs && typeof outputs === "object" && !Array.isArray(outputs)
                      ? Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, outputsEntry(v)]))
                      : outputs,
                  ),
                },
                { weight: 1, arbitrary: edgeValue(fc) },
              ),
              resources: fc.oneof(fc.constant([{ mode: "managed", type: "terraform_data", name: "x", instances: [] }]), edgeValue(fc)),
            })
            .map((document) => JSON.stringify(document)),
        ),
    },
    { weight: 1, arbitrary: edgeValue(fc).map((value) => JSON.stringify(value) ?? "") },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
  );
}

/** The Secrets the reader lists for one suffix: the gzip stream over 1 to 4 Secrets, then damaged. */
export function stateSecrets(fc, baseName) {
  return fc
    .record({
      text: stateText(fc),
      chunks: fc.integer({ min: 1, max: 4 }),
      damage: fc.constantFrom(...secretDamage),
      at: fc.nat(),
      byte: fc.integer({ min: 1, max: 255 }),
    })
    .map(({ text, chunks, damage, at, byte }) => {
      let gz = gzipSync(Buffer.from(text, "utf8"));
      if (damage === "flip") gz = Buffer.from(gz.map((b, i) => (i === at % gz.length ? b ^ byte : b)));
      if (damage === "truncate") gz = gz.subarray(0, at % gz.length);
      if (damage === "empty") gz = Buffer.alloc(0);
      const size = Math.max(1, Math.ceil(gz.length / chunks));
      let secrets = Array.from({ length: chunks }, (_, i) => ({
        name: i === 0 ? baseName : `${baseName}-part-${i}`,
        data: { tfstate: gz.subarray(i * size, (i + 1) * size).toString("base64") },
        annotations: { encoding: "gzip" },
      }));
      const victim = at % secrets.length;
      if (damage === "drop-chunk") secrets = secrets.filter((_, i) => i !== victim);
      if (damage === "rename-chunk") secrets[victim] = { ...secrets[victim], name: `${baseName}-part-0${victim}` };
      if (damage === "not-base64") secrets[victim] = { ...secrets[victim], data: { tfstate: "%%%not base64%%%" } };
      if (damage === "no-tfstate") secrets[victim] = { ...secrets[victim], data: {} };
      if (damage === "duplicate-chunk") secrets.push({ ...secrets[victim] });
      return { secrets, damage };
    });
}

/** Why a decodeOutputs result is not a well-formed verdict, or undefined. */
function outputsVerdictProblem(result) {
  if (!result || typeof result !== "object") return "no result object";
  if (
    !["OutputsMissing", "OutputsInvalid", "FailureDomainMismatch", "OutputsPending", "InstancesTruncated", "OutputsValid"].includes(
      result.reason,
    )
  )
    return `unknown reason ${result.reason}`;
  if (!Array.isArray(result.problems) || result.problems.some((p) => typeof p !== "string" || p.length === 0))
    return "problems are not messages";
  if (result.reason !== "OutputsValid" && result.reason !== "InstancesTruncated" && result.problems.length === 0)
    return `${result.reason} without a message`;
  return undefined;
}

/** Why a state reading is not a well-formed verdict, or undefined. */
function stateVerdictProblem(reading) {
  if (!reading || !["absent", "ok", "unreadable"].includes(reading.kind)) return `unknown kind ${reading?.kind}`;
  if (reading.kind === "unreadable" && !(typeof reading.message === "string" && reading.message.length > 0 && reading.reason))
    return "unreadable without a reason and a message";
  return undefined;
}

/**
 * The drill's properties. `subjects`: decodeOutputs and outputValuesFromState (@captf/contract),
 * decodeStateSecrets and stateSecretName (the controller's state reader, the renderer's naming).
 * Each property throws (failing the run) when the code under test throws or answers malformed;
 * `tally` counts verdicts for the report.
 */
export function outputDocumentProperties(fc, subjects, tally = new Map()) {
  const count = (key) => tally.set(key, (tally.get(key) ?? 0) + 1);
  const suffix = "0123456789abcdef-m";
  const baseName = subjects.stateSecretName(suffix);
  return {
    tally,
    decodeOutputs: fc.property(
      fc.constantFrom(...roles).chain((role) => fc.tuple(fc.constant(role), mutatedOutputs(fc, role), fc.boolean())),
      ([role, document, fromState]) => {
        const result = subjects.decodeOutputs(role, document, undefined, { fromState });
        const problem = outputsVerdictProblem(result);
        if (problem) throw new Error(`decodeOutputs(${role}) answered malformed: ${problem}`);
        count(`outputs ${result.reason}`);
      },
    ),
    outputsFromState: fc.property(stateText(fc), fc.constantFrom(...roles), (text, role) => {
      let document;
      try {
        document = JSON.parse(text);
      } catch {
        count("state text not JSON (never reaches the decoder)");
        return;
      }
      const result = subjects.decodeOutputs(role, subjects.outputValuesFromState(document), undefined, { fromState: true });
      const problem = outputsVerdictProblem(result);
      if (problem) throw new Error(`decodeOutputs(${role}) of a state answered malformed: ${problem}`);
      count(`state outputs ${result.reason}`);
    }),
    stateReader: fc.property(stateSecrets(fc, baseName), ({ secrets, damage }) => {
      const reading = subjects.decodeStateSecrets(suffix, secrets);
      const problem = stateVerdictProblem(reading);
      if (problem) throw new Error(`decodeStateSecrets (${damage}) answered malformed: ${problem}`);
      count(`state ${damage} → ${reading.kind === "unreadable" ? reading.reason : reading.kind}`);
    }),
  };
}
