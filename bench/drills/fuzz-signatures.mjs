#!/usr/bin/env node
// Drill: malformed cosign signatures (issue 31 §1) against a real loopback registry (Debian's docker-registry) behind a
// front that passes every request on and, for a served case, answers as a broken or hostile registry would. Each
// input is pushed (what the registry accepts: a simple-signing payload, its signature, the signature manifest or the
// referrers tag schema's index, mutated after signing, or a payload changed and signed again by the trusted key) or
// served (bytes the front answers for the signature tag, the referrers API or the payload blob, or an HTTP failure). The
// verifier is what the manager and `tfcapi-lint image --key` run: @captf/contract's verifyImageSignature on a RegistrySource.
// It must answer an outcome for every input (a crash, an exception, is a failure), verify an untouched signature, and verify
// nothing else but a re-signed payload that still names the image's digest as cosign's type. Prints the outcomes by case and
// the refusals by reason. Run `npx tsc -b` first. Usage: node bench/drills/fuzz-signatures.mjs [--runs N] [--seed S]
import { createHash, generateKeyPairSync, sign } from "node:crypto";
import { createServer, request as httpRequest } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { loadDependency, repo, requireBuilt } from "../lib/controller-packages.mjs";
import { drillOptions, fc, runProperty } from "../lib/run-property.mjs";

requireBuilt();
const signatures = await loadDependency("@captf/contract/signatures");
const { parseRegistryReference, RegistrySource } = await loadDependency("@captf/contract/oci");
const { startLocalRegistry } = await import(pathToFileURL(join(repo, "packages/testkit/dist/oci.js")).href);
const { signatureAnnotation, signatureArtifactType, signatureTag, referrersTag, simpleSigningMediaType } = signatures;

const ociManifest = "application/vnd.oci.image.manifest.v1+json";
const ociIndex = "application/vnd.oci.image.index.v1+json";
const repository = "fuzz/module";
const sha = (bytes) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
const json = (value) => Buffer.from(JSON.stringify(value));
const outcomeKinds = new Set(["verified", "missing", "invalid", "unknown-key", "unreachable"]);

// The trusted key (ECDSA P-256, as `cosign generate-key-pair` makes) and a stranger's.
const trusted = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const stranger = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const key = signatures.readPublicKey(trusted.publicKey.export({ format: "pem", type: "spki" }).toString(), "release").key;
const signed = (payload, pair = trusted) => sign("sha256", payload, pair.privateKey).toString("base64");

/** The registry's HTTP API, straight (not through the front): what a signer pushes. */
function registryClient(host) {
  const url = (path) => `http://${host}/v2/${repository}/${path}`;
  return {
    async blob(bytes) {
      const started = await fetch(url("blobs/uploads/"), { method: "POST" });
      const location = new URL(started.headers.get("location"), `http://${host}`);
      location.searchParams.set("digest", sha(bytes));
      const done = await fetch(location, { method: "PUT", body: bytes, headers: { "content-type": "application/octet-stream" } });
      if (done.status !== 201) throw new Error(`blob push answered ${done.status}`);
      return { mediaType: simpleSigningMediaType, digest: sha(bytes), size: bytes.length };
    },
    /** Whether the registry took the manifest at `reference`: it refuses some malformed ones, as real registries do. */
    async manifest(reference, bytes, mediaType) {
      const answer = await fetch(url(`manifests/${reference}`), { method: "PUT", body: bytes, headers: { "content-type": mediaType } });
      await answer.arrayBuffer();
      return answer.status === 201;
    },
  };
}

/**
 * A front to the registry: passes every request on (distribution 2.8 has no referrers API: it answers 404, and the verifier reads
 * the referrers tag schema), except the one `served` names, which it answers itself as a broken or hostile registry would.
 */
async function startFront(upstream) {
  const front = { served: undefined };
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://front").pathname;
    const served = front.served?.path === path ? front.served : undefined;
    if (served) return answerServed(served, res);
    const forward = httpRequest({ ...upstream, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    forward.on("error", (error) => res.writeHead(502).end(error.message));
    req.pipe(forward);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  front.host = `127.0.0.1:${server.address().port}`;
  front.stop = () => new Promise((resolve) => server.close(resolve));
  return front;
}

/** What the front answers for a served case: a status, or bytes with a content type and the digest it claims. */
function answerServed(served, res) {
  if (served.status) return res.writeHead(served.status, served.headers ?? {}).end();
  const headers = { "content-type": served.contentType, "docker-content-digest": served.claimedDigest ?? sha(served.bytes) };
  if (served.truncate) {
    res.writeHead(200, { ...headers, "content-length": String(served.bytes.length + 10) });
    res.write(served.bytes);
    return res.destroy();
  }
  res.writeHead(200, headers).end(served.bytes);
}

/** One image per input: its digest is what the signatures claim. */
let images = 0;
async function pushSubject(registry, layer) {
  const manifest = json({
    schemaVersion: 2,
    mediaType: ociManifest,
    config: layer.config,
    layers: [layer.layer],
    annotations: { "fuzz.captf.io/input": String(images++) },
  });
  if (!(await registry.manifest(`input-${images}`, manifest, ociManifest))) throw new Error("the registry refused a plain manifest");
  return sha(manifest);
}

/** The cosign signature of `digest` as `cosign sign` writes it: payload, signature, manifest (a referrer of the image too). */
function goodSignature(digest) {
  const payload = json({
    critical: {
      identity: { "docker-reference": `registry.example.com/${repository}` },
      image: { "docker-manifest-digest": digest },
      type: "cosign container image signature",
    },
    optional: null,
  });
  return { payload, signature: signed(payload) };
}

function signatureManifest(config, payload, signature, subject) {
  const layer = {
    mediaType: simpleSigningMediaType,
    digest: sha(payload),
    size: payload.length,
    annotations: { [signatureAnnotation]: signature },
  };
  return {
    schemaVersion: 2,
    mediaType: ociManifest,
    ...(subject ? { artifactType: signatureArtifactType, subject } : {}),
    config,
    layers: [layer],
  };
}

// Mutations: bytes edited, a JSON value replaced or removed at a path, or other bytes entirely.
const byteEdits = fc.array(fc.record({ at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 8 });
const jsonEdit = fc.record({ path: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), value: fc.option(fc.jsonValue({ maxDepth: 2 })) });
const bytesChange = fc.oneof(
  byteEdits.map((edits) => ({ edits })),
  jsonEdit.map((edit) => ({ edit })),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ bytes: Buffer.from(bytes) })),
);

function editBytes(bytes, edits) {
  const copy = Buffer.from(bytes);
  for (const { at, value } of edits) if (copy.length > 0) copy[at % copy.length] = value;
  return copy;
}

/** `document` with the value at `path` (each step an index into the keys there) replaced, or removed when `value` is null. */
function editJson(document, { path, value }) {
  const copy = structuredClone(document);
  let node = copy;
  for (const [depth, step] of path.entries()) {
    if (node === null || typeof node !== "object") break;
    const keys = Object.keys(node);
    if (keys.length === 0) break;
    const name = Array.isArray(node) ? Number(keys[step % keys.length]) : keys[step % keys.length];
    if (depth === path.length - 1 || node[name] === null || typeof node[name] !== "object") {
      if (value !== null) node[name] = value;
      else if (Array.isArray(node)) node.splice(name, 1);
      else delete node[name];
      break;
    }
    node = node[name];
  }
  return copy;
}

function changed(bytes, change) {
  if (change.bytes) return change.bytes;
  if (change.edits) return editBytes(bytes, change.edits);
  return json(editJson(JSON.parse(bytes.toString()), change.edit));
}

const cases = fc.oneof(
  bytesChange.map((change) => ({ case: "pushed payload", change })),
  bytesChange.map((change) => ({ case: "pushed payload, signed again", change })),
  fc
    .oneof(
      byteEdits.map((edits) => ({ edits })),
      fc.string({ maxLength: 120 }).map((text) => ({ text })),
      fc.constant({ stranger: true }),
    )
    .map((change) => ({ case: "pushed signature", change })),
  bytesChange.map((change) => ({ case: "pushed signature manifest", change })),
  bytesChange.map((change) => ({ case: "pushed referrers tag index", change })),
  fc
    .record({ change: bytesChange, contentType: fc.constantFrom(ociManifest, ociIndex, "text/plain", ""), lie: fc.boolean() })
    .map((served) => ({ case: "served signature tag", ...served })),
  bytesChange.map((change) => ({ case: "served referrers API index", change })),
  fc.record({ change: bytesChange, truncate: fc.boolean() }).map((served) => ({ case: "served payload blob", ...served })),
  fc
    .record({ status: fc.constantFrom(400, 401, 403, 404, 429, 500, 503), at: fc.constantFrom("tag", "referrers", "blob") })
    .map((served) => ({ case: "served HTTP failure", ...served })),
);

/**
 * Pushes the input's signature (changed as it says) and sets what the front serves. Returns whether the registry took the push,
 * whether a verification may pass (the signed payload and its signature still reach the verifier unchanged) and whether it
 * must (nothing that matters changed).
 */
async function place(input, registry, front, shared) {
  const digest = await pushSubject(registry, shared);
  const good = goodSignature(digest);
  let { payload, signature } = good;
  if (input.case === "pushed payload") payload = changed(good.payload, input.change);
  if (input.case === "pushed payload, signed again") {
    payload = changed(good.payload, input.change);
    signature = signed(payload);
  }
  if (input.case === "pushed signature") {
    const { edits, text, stranger: other } = input.change;
    signature = other ? signed(payload, stranger) : (text ?? editBytes(Buffer.from(signature, "base64"), edits).toString("base64"));
  }
  const untouched =
    input.case === "pushed payload, signed again"
      ? claimsDigest(payload, digest)
      : payload.equals(good.payload) && signature === good.signature;
  await registry.blob(payload);
  const subject = { mediaType: ociManifest, digest, size: 0 };
  const manifest = json(signatureManifest(shared.config, payload, signature, input.case.includes("referrers") ? subject : undefined));
  const placed = await placeManifest(input, { registry, front, digest, manifest, payload });
  return { digest, pushed: placed.pushed ?? true, may: untouched && placed.may, must: untouched && placed.must };
}

/** Whether `bytes` still hold `parts` (a descriptor's digest, a signature): what a verification needs to find. */
const holds = (bytes, ...parts) => parts.every((part) => bytes.toString("latin1").includes(part));

async function placeManifest(input, { registry, front, digest, manifest, payload }) {
  const kept = { may: true, must: input.case.startsWith("pushed") };
  if (input.case === "pushed signature manifest") {
    const mutated = changed(manifest, input.change);
    const pushed = await registry.manifest(signatureTag(digest), mutated, ociManifest);
    return { pushed, may: holds(mutated, sha(payload)), must: pushed && mutated.equals(manifest) };
  }
  if (input.case === "pushed referrers tag index" || input.case === "served referrers API index") {
    if (!(await registry.manifest(sha(manifest), manifest, ociManifest))) throw new Error("the registry refused a signature manifest");
    const good = json({ schemaVersion: 2, mediaType: ociIndex, manifests: [descriptorOf(manifest)] });
    const index = changed(good, input.change);
    if (input.case.startsWith("served")) {
      front.served = { path: `/v2/${repository}/referrers/${digest}`, bytes: index, contentType: ociIndex };
      return { may: holds(index, sha(manifest)), must: false };
    }
    const pushed = await registry.manifest(referrersTag(digest), index, ociIndex);
    return { pushed, may: holds(index, sha(manifest)), must: pushed && index.equals(good) };
  }
  if (!(await registry.manifest(signatureTag(digest), manifest, ociManifest))) throw new Error("the registry refused a signature manifest");
  if (input.case === "served signature tag") {
    const bytes = changed(manifest, input.change);
    const claimedDigest = input.lie ? sha(manifest) : undefined;
    front.served = { path: `/v2/${repository}/manifests/${signatureTag(digest)}`, bytes, contentType: input.contentType, claimedDigest };
    return { may: holds(bytes, sha(payload)), must: false };
  }
  if (input.case === "served payload blob") {
    const bytes = changed(payload, input.change);
    front.served = {
      path: `/v2/${repository}/blobs/${sha(payload)}`,
      bytes,
      contentType: "application/octet-stream",
      truncate: input.truncate,
    };
    return { may: !input.truncate && bytes.equals(payload), must: false };
  }
  if (input.case === "served HTTP failure") {
    const paths = { tag: `manifests/${signatureTag(digest)}`, referrers: `referrers/${digest}`, blob: `blobs/${sha(payload)}` };
    front.served = { path: `/v2/${repository}/${paths[input.at]}`, status: input.status };
    // A failed referrers API must not hide the signature under the tag; a failed tag or payload read verifies nothing.
    return { may: input.at === "referrers", must: input.at === "referrers" };
  }
  return kept;
}

const descriptorOf = (manifest) => ({
  mediaType: ociManifest,
  digest: sha(manifest),
  size: manifest.length,
  artifactType: signatureArtifactType,
});

/** The drill's own reading of a payload: cosign's type, and the image digest it names. */
function claimsDigest(payload, digest) {
  try {
    const { critical } = JSON.parse(payload.toString());
    return critical?.type === "cosign container image signature" && critical?.image?.["docker-manifest-digest"] === digest;
  } catch {
    return false;
  }
}

/** A refusal's reason without digests, sizes and what the mutation put in it. */
function reasonOf(outcome) {
  const text = outcome.problem ?? outcome.problems?.[0] ?? "";
  return text
    .replace(/sha256[:-][0-9a-f]{64}(\.sig)?/g, "<digest>")
    .replace(/\d+/g, "N")
    .replace(/^<digest>: /, "")
    .slice(0, 90);
}

const options = drillOptions(process.argv.slice(2), { runs: 2_000 });
const registryProcess = await startLocalRegistry();
const front = await startFront({ host: "127.0.0.1", port: Number(registryProcess.host.split(":")[1]) });
const registry = registryClient(registryProcess.host);
const config = Buffer.from("{}");
const layerBytes = Buffer.from("fuzz");
const shared = {
  config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: sha(config), size: config.length },
  layer: { mediaType: "application/vnd.oci.image.layer.v1.tar", digest: sha(layerBytes), size: layerBytes.length },
};
await registry.blob(config);
await registry.blob(layerBytes);

const tally = new Map();
const reasons = new Map();
const count = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
const property = fc.asyncProperty(cases, async (input) => {
  front.served = undefined;
  const placed = await place(input, registry, front, shared);
  const source = new RegistrySource(parseRegistryReference(`${front.host}/${repository}@${placed.digest}`), {
    insecure: false,
    credentials: undefined,
    credentialsOrigin: "none",
    timeoutMs: 10_000,
  });
  let outcome;
  try {
    outcome = await signatures.verifyImageSignature(source, () => source.root(), [key]);
  } catch (error) {
    count(tally, `${input.case}: CRASH ${error?.constructor?.name}`);
    throw error;
  } finally {
    front.served = undefined;
  }
  count(tally, `${input.case}: ${placed.pushed ? "" : "(registry refused the push) "}${outcome.kind}`);
  if (outcome.kind !== "verified" && outcome.kind !== "missing") count(reasons, `${outcome.kind}: ${reasonOf(outcome)}`);
  if (!outcomeKinds.has(outcome.kind)) throw new Error(`not an outcome: ${JSON.stringify(outcome)}`);
  if (outcome.kind === "verified" && !placed.may) throw new Error(`verified a ${input.case} it must refuse`);
  if (placed.must && outcome.kind !== "verified")
    throw new Error(`refused an untouched signature (${input.case}): ${JSON.stringify(outcome)}`);
});

let held;
try {
  held = await runProperty("verifyImageSignature", property, options, tally);
  console.log("refusals by reason:");
  for (const [reason, n] of [...reasons].sort(([, a], [, b]) => b - a)) console.log(`  ${String(n).padStart(6)}  ${reason}`);
} finally {
  await front.stop();
  await registryProcess.stop();
}
process.exit(held ? 0 : 1);
