import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { maskReason, planDiffDataKey, planDiffSecretName, readPlanDiff, type PlanDiff } from "@captf/contract/plan-diff";
import { brokerScope, checkBody, decideRequest } from "./broker/policy.js";
import { parsePlanDocument, planSensitiveValues } from "./plan.js";
import { encodePlanDiff, maskValue, planDiffOf } from "./plan-diff.js";
import { createPlanDiffKeeper, planDiffSecret, type PlanDiffInput } from "./plan-diff-store.js";
import { planSecrets, redactor, variableSecrets } from "./redact.js";

// Real `show -json` of one plan (testdata/plan-diff/README.md): a sensitive variable, a sensitive attribute, values known
// only after apply, a create, an update, a replacement and a destroy. CANARY-… are the variable's values.
const fixtures = ["tofu-1.12.6-show.json", "terraform-1.5.7-show.json"];
const read = (file: string) => readFileSync(new URL(`testdata/plan-diff/${file}`, import.meta.url), "utf8");
const made = { planHash: "p1:0123", job: "c-demo-plan-a3" };

/** The diff as a run makes it: the redactor holds the plan's sensitive values and the sensitive variable's, as run.ts adds them. */
function runDiff(file: string): PlanDiff {
  const plan = parsePlanDocument(read(file));
  const variables = variableSecrets(
    JSON.stringify({ variable: { password: { type: "string", sensitive: true } } }),
    JSON.stringify({ password: "CANARY-new-pw-2" }),
  );
  const redact = redactor([...variables, ...planSecrets(planSensitiveValues(plan))]);
  return planDiffOf(plan, made, (text) => redact(text) !== text);
}

const resource = (diff: PlanDiff, address: string) => diff.resources.find((entry) => entry.address === address)!;

describe.each(fixtures)("the diff of a real plan (%s)", (file) => {
  it("keeps no secret: sensitive attributes, outputs and every string the run knows as one are masked", () => {
    const diff = runDiff(file);
    expect(JSON.stringify(diff)).not.toContain("CANARY");
    const secret = resource(diff, "terraform_data.secret");
    expect(secret.before).toMatchObject({ input: { "captf:masked": "sensitive" } });
    // The variable's new value, changed: the one bit `tofu show` prints too.
    expect(secret.after).toMatchObject({ input: { "captf:masked": "sensitive-changed" } });
    // The runtime does not mark the old output sensitive (tofu show prints it): the redactor knows it from before_sensitive.
    expect(secret.before).toMatchObject({ output: { "captf:masked": "sensitive" } });
    expect(diff.outputs).toEqual([
      { name: "password", actions: ["update"], before: { "captf:masked": "sensitive" }, after: { "captf:masked": "sensitive-changed" } },
      { name: "size", actions: ["update"], before: "1", after: "2" },
    ]);
  });

  it("marks values known only after apply, including attributes the plan's after leaves out", () => {
    const diff = runDiff(file);
    expect(resource(diff, "terraform_data.fresh[0]")).toMatchObject({
      actions: ["create"],
      before: null,
      after: { id: { "captf:masked": "unknown" }, input: { at: { "captf:masked": "unknown" }, note: "new" } },
    });
    expect(resource(diff, "terraform_data.secret").after).toMatchObject({ output: { "captf:masked": "unknown" } });
  });

  it("keeps each change's actions, addresses and plain values, in plan order", () => {
    const diff = runDiff(file);
    expect(diff.resources.map((entry) => [entry.address, entry.actions.join(",")])).toEqual([
      ["terraform_data.fresh[0]", "create"],
      ["terraform_data.gone[0]", "delete"],
      ["terraform_data.replaced", "delete,create"],
      ["terraform_data.secret", "update"],
      ["terraform_data.sized", "update"],
    ]);
    expect(resource(diff, "terraform_data.gone[0]")).toMatchObject({ after: null, actionReason: "delete_because_count_index" });
    expect(resource(diff, "terraform_data.sized")).toMatchObject({
      type: "terraform_data",
      name: "sized",
      mode: "managed",
      before: { input: { size: "1", tags: ["a", "1"] } },
      after: { input: { size: "2", tags: ["a", "2"] } },
    });
    expect(resource(diff, "terraform_data.replaced").replacePaths).toEqual([["triggers_replace"]]);
    expect(readPlanDiff(JSON.parse(JSON.stringify(diff)))).toEqual(diff);
  });
});

it("is the diff kubectl-captf's formatting test prints (its fixture)", () => {
  const printed = readFileSync(new URL("../../kubectl-captf/src/testdata/plan-diff-tofu-1.12.6.json", import.meta.url), "utf8");
  expect(JSON.parse(printed)).toEqual(JSON.parse(JSON.stringify({ ...runDiff(fixtures[0]!), planHash: "p1:x", job: "j" })));
});

describe("maskValue", () => {
  const none = () => false;
  it("hides what the sensitive mask marks, at any depth, and the whole value when the mask is true", () => {
    expect(maskValue({ a: "x", b: ["y", "z"] }, { b: [false, true] }, undefined, none)).toEqual({
      a: "x",
      b: ["y", { "captf:masked": "sensitive" }],
    });
    expect(maskValue({ a: "x" }, true, undefined, none)).toEqual({ "captf:masked": "sensitive" });
  });

  it("adds back what is unknown as a whole, in objects and lists", () => {
    expect(maskValue({ a: "x" }, undefined, { b: true }, none)).toEqual({ a: "x", b: { "captf:masked": "unknown" } });
    expect(maskValue(["x"], undefined, [false, true], none)).toEqual(["x", { "captf:masked": "unknown" }]);
  });

  it("hides a string, a number or a map key the run knows as a secret, though nothing marks it", () => {
    const isSecret = (text: string) => text.includes("hunter22") || text === "31337";
    expect(maskValue({ note: "pw=hunter22", port: 31337, ok: true }, undefined, undefined, isSecret)).toEqual({
      note: { "captf:masked": "sensitive" },
      port: { "captf:masked": "sensitive" },
      ok: true,
    });
    expect(maskValue({ tags: { hunter22: "v" } }, undefined, undefined, isSecret)).toEqual({ tags: { "captf:masked": "sensitive" } });
  });

  it("says whether a hidden after value changed from its before, and nothing else of it", () => {
    expect(maskValue({ s: "new" }, { s: true }, undefined, none, { value: { s: "old" } })).toEqual({
      s: { "captf:masked": "sensitive-changed" },
    });
    expect(maskValue({ s: "same" }, { s: true }, undefined, none, { value: { s: "same" } })).toEqual({
      s: { "captf:masked": "sensitive" },
    });
    expect(maskReason({ "captf:masked": "sensitive", more: 1 })).toBeUndefined();
  });
});

describe("maskValue on any value and any marks (fast-check, 300 runs)", () => {
  /** A sensitivity mask of `value`: true at some nodes, drawn from `bits`, mirroring its shape elsewhere. */
  function maskOf(value: unknown, bits: () => boolean): unknown {
    if (bits()) return true;
    if (Array.isArray(value)) return value.map((entry) => maskOf(entry, bits));
    if (typeof value === "object" && value !== null)
      return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, maskOf(entry, bits)]));
    return false;
  }
  /** Every path where the mask is true, with the masked value found there. */
  function marked(mask: unknown, masked: unknown, into: unknown[] = []): unknown[] {
    if (mask === true) into.push(masked);
    else if (typeof mask === "object" && mask !== null && typeof masked === "object" && masked !== null && maskReason(masked) === undefined)
      for (const [key, entry] of Object.entries(mask)) marked(entry, (masked as Record<string, unknown>)[key], into);
    return into;
  }
  /** The strings and keys a masked value shows, its marks left out. */
  function shown(value: unknown, into: string[] = []): string[] {
    if (typeof value === "string") into.push(value);
    else if (typeof value === "object" && value !== null && maskReason(value) === undefined)
      for (const [key, entry] of Object.entries(value)) {
        if (!Array.isArray(value)) into.push(key);
        shown(entry, into);
      }
    return into;
  }
  // An arbitrary rule for which texts are secrets: about a third of them.
  const isSecret = (text: string) => text.length % 3 === 1;

  it("hides every marked value and shows no text the run knows as a secret, at any depth", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(fc.boolean(), { minLength: 1, maxLength: 64 }), (value, drawn) => {
        let index = 0;
        const bits = () => drawn[index++ % drawn.length]! && index % 3 === 0;
        const mask = maskOf(value, bits);
        const masked = maskValue(value, mask, undefined, isSecret);
        for (const hidden of marked(mask, masked)) expect(hidden).toEqual({ "captf:masked": "sensitive" });
        expect(shown(masked).filter(isSecret)).toEqual([]);
      }),
      { numRuns: 300, seed: 3303 },
    );
  });
});

describe("the kept form", () => {
  it("is gzipped JSON; over the limit only the header and why it was omitted are kept", () => {
    const diff = runDiff(fixtures[0]!);
    const kept = encodePlanDiff(diff);
    expect(kept.omitted).toBeUndefined();
    expect(JSON.parse(gunzipSync(kept.data).toString("utf8"))).toEqual(JSON.parse(JSON.stringify(diff)));
    const small = encodePlanDiff(diff, 100);
    expect(small.omitted).toMatch(/^the plan's diff is \d+ bytes compressed, over the 100 bytes kept \(5 resources, 2 outputs\)/);
    expect(JSON.parse(gunzipSync(small.data).toString("utf8"))).toEqual({
      ...made,
      version: 1,
      resources: [],
      outputs: [],
      omitted: small.omitted,
    });
  });

  it("is a Secret the object owns, which the Job's broker lets through, and only that Secret as the runner writes it", () => {
    const object = {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformCluster",
      namespace: "ns",
      name: "demo",
      uid: "u-1",
    };
    const scope = brokerScope(object, "0123456789abcdef-c");
    const secret = planDiffSecret(object, Buffer.from("gz"));
    const name = planDiffSecretName(object);
    expect(secret).toMatchObject({
      metadata: {
        name,
        namespace: "ns",
        labels: { "captf.infrastructure.cluster.x-k8s.io/owner-kind": "TerraformCluster" },
        ownerReferences: [{ kind: "TerraformCluster", name: "demo", uid: "u-1" }],
      },
      data: { [planDiffDataKey]: Buffer.from("gz").toString("base64") },
    });
    // Not one the manager caches (captf.io/managed=true Secrets, with their data): it never reads a diff.
    expect((secret.metadata as { labels: Record<string, string> }).labels["captf.io/managed"]).toBeUndefined();
    const path = `/api/v1/namespaces/ns/secrets/${name}`;
    expect(decideRequest(scope, "PUT", path, new URLSearchParams())).toMatchObject({ allowed: true, bodyCheck: "state-name" });
    expect(checkBody(scope, "state-name", secret, name)).toBeUndefined();
    expect(checkBody(scope, "state-name", secret)).toBeUndefined();
    for (const method of ["GET", "DELETE", "PATCH"]) expect(decideRequest(scope, method, path, new URLSearchParams()).allowed).toBe(false);
    const owned = (ownerReferences: unknown[]) => ({ ...secret, metadata: { ...(secret.metadata as object), ownerReferences } });
    expect(checkBody(scope, "state-name", owned([]), name)).toMatch(/owned by this run's object alone/);
    expect(checkBody(scope, "state-name", owned([{ kind: "TerraformCluster", name: "other", uid: "u-2" }]), name)).toMatch(/alone/);
    expect(checkBody(scope, "state-name", owned([{ kind: "TerraformCluster", name: "demo", uid: "u-1", controller: true }]), name)).toMatch(
      /not as its controller/,
    );
    expect(checkBody(scope, "state-name", { ...secret, data: { other: "eA==" } }, name)).toMatch(/one key diff\.json\.gz/);
    expect(checkBody(scope, "state-name", { ...secret, stringData: { x: "y" } }, name)).toMatch(/no stringData/);
    // Another object's plan diff Secret is no more this run's than its state.
    const other = planDiffSecretName({ ...object, name: "other" });
    expect(decideRequest(scope, "PUT", `/api/v1/namespaces/ns/secrets/${other}`, new URLSearchParams())).toMatchObject({ allowed: false });
  });
});

it("names one Secret per object", () => {
  const owner = { namespace: "ns", kind: "TerraformCluster", name: "demo" };
  expect(planDiffSecretName(owner)).toMatch(/^captf-plan-diff-[0-9a-f]{16}$/);
  expect(planDiffSecretName({ ...owner, kind: "TerraformMachine" })).not.toBe(planDiffSecretName(owner));
});

describe("the keeper", () => {
  const object = {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
    kind: "TerraformCluster",
    namespace: "ns",
    name: "demo",
    uid: "u-1",
  };
  const name = planDiffSecretName(object);

  /** A stand-in API server answering each request with the next status; what it was sent. */
  async function apiServer(statuses: number[]) {
    const requests: { method: string; path: string; body: string }[] = [];
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      request.on("end", () => {
        requests.push({ method: request.method!, path: request.url!, body });
        response.writeHead(statuses.shift() ?? 500).end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { requests, server, endpoint: { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token` } };
  }

  /** What a run hands the keeper: the fixture's plan and summary; the events and log lines it got back. */
  function runInput() {
    const events: string[][] = [];
    const logged: string[] = [];
    const plan = parsePlanDocument(read(fixtures[0]!));
    const redact = redactor(planSecrets(planSensitiveValues(plan)));
    const input: PlanDiffInput = {
      plan,
      summary: { hash: "p1:abc", add: 2, change: 2, destroy: 2, resources: [], truncated: false },
      redact,
      emit: (type, reason, action, note) => events.push([type, reason, action, note]),
      log: { info: (message) => logged.push(`info ${message}`), error: (message) => logged.push(`error ${message}`) },
    };
    return { input, events, logged };
  }

  it("replaces the Secret, or creates it when there is none, through the endpoint's path", async () => {
    const api = await apiServer([404, 201]);
    try {
      const { input, events, logged } = runInput();
      await createPlanDiffKeeper({ endpoint: Promise.resolve(api.endpoint), object, job: "c-demo-plan-a1" })(input);
      expect(api.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
        `PUT /token/api/v1/namespaces/ns/secrets/${name}`,
        "POST /token/api/v1/namespaces/ns/secrets",
      ]);
      const secret = JSON.parse(api.requests[1]!.body) as { data: Record<string, string> };
      const kept = JSON.parse(gunzipSync(Buffer.from(secret.data[planDiffDataKey]!, "base64")).toString("utf8")) as PlanDiff;
      expect(kept).toMatchObject({ planHash: "p1:abc", job: "c-demo-plan-a1" });
      expect(kept.resources).toHaveLength(5);
      expect(api.requests[1]!.body).not.toContain("CANARY");
      expect(events).toEqual([]);
      expect(logged).toEqual(["info plan diff kept"]);
    } finally {
      api.server.close();
    }
  });

  it("records PlanDiffNotKept when the diff is too large or the write is refused, and never fails the run", async () => {
    const api = await apiServer([200, 403]);
    try {
      const tooLarge = runInput();
      await createPlanDiffKeeper({ endpoint: Promise.resolve(api.endpoint), object, job: "j", maxBytes: 64 })(tooLarge.input);
      expect(tooLarge.events).toEqual([
        [
          "Warning",
          "PlanDiffNotKept",
          "show-json",
          expect.stringMatching(/^plan p1:abc: the plan's diff is \d+ bytes compressed, over the 64/),
        ],
      ]);
      const kept = JSON.parse(api.requests[0]!.body) as { data: Record<string, string> };
      expect(JSON.parse(gunzipSync(Buffer.from(kept.data[planDiffDataKey]!, "base64")).toString("utf8"))).toMatchObject({
        resources: [],
        omitted: expect.stringContaining("over the 64 bytes kept"),
      });
      const refused = runInput();
      await createPlanDiffKeeper({ endpoint: Promise.resolve(api.endpoint), object, job: "j" })(refused.input);
      expect(refused.events).toEqual([
        [
          "Warning",
          "PlanDiffNotKept",
          "show-json",
          `plan p1:abc: its diff was not kept in Secret ${name}: the API server answered 403 to writing Secret ns/${name}`,
        ],
      ]);
      expect(refused.logged).toEqual(["error the plan's diff was not kept"]);
    } finally {
      api.server.close();
    }
  });
});
