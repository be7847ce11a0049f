// `tfcapi-lint image --key` and the verifier it shares with the manager, on real cosign signatures (cosign v2.6.5 from
// tools/, no transparency log) in Debian's docker-registry (distribution 2.8: no referrers API, so cosign's referrers mode
// writes the referrers tag schema there) and behind a front that adds the referrers API (startReferrersRegistry).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { cosignKeyPair, cosignSign, describeWithTools, startReferrersRegistry, type CosignKeyPair } from "@captf/testkit";
import { parseRegistryReference, RegistrySource } from "@captf/contract/oci";
import { readPublicKey, signatureTag, verifyImageSignature, type TrustedKey } from "@captf/contract/signatures";
import { run } from "../cli.test-support.js";
import { buildImage, push, startRegistry } from "./image-fixtures.test-support.js";

const dir = mkdtempSync(join(tmpdir(), "tfcapi-lint-cosign-"));
const layout = join(dir, "layout");
let registry: Awaited<ReturnType<typeof startRegistry>>;
let front: Awaited<ReturnType<typeof startReferrersRegistry>>;
let ecdsa: CosignKeyPair;
let ed25519: CosignKeyPair;
let stranger: CosignKeyPair;

const trusted = (pair: CosignKeyPair): TrustedKey => readPublicKey(readFileSync(pair.publicKey, "utf8"), pair.publicKey).key!;

/** Pushes a fresh image (its own content, so its own digest) to `host` and returns `<host>/<repository>@<digest>`. */
async function pushImage(host: string, repository: string, tag = "v1"): Promise<string> {
  buildImage(layout, `${repository}-${tag}`, { files: { "/captf/module/main.tf": `# ${repository}:${tag}\n` }, user: "65532" });
  push(layout, `${repository}-${tag}`, `${host}/${repository}:${tag}`);
  const digest = (await new RegistrySource(parseRegistryReference(`${host}/${repository}:${tag}`), registryOptions).root()).digest;
  return `${host}/${repository}@${digest}`;
}

const registryOptions = { insecure: false, credentials: undefined, credentialsOrigin: "none" };

function verify(image: string, keys: readonly TrustedKey[]) {
  const source = new RegistrySource(parseRegistryReference(image), registryOptions);
  return verifyImageSignature(source, () => source.root(), keys);
}

describeWithTools(["cosign", "docker-registry", "umoci", "skopeo"], "image signatures made by cosign", () => {
  beforeAll(async () => {
    registry = await startRegistry();
    front = await startReferrersRegistry(registry.host);
    ecdsa = cosignKeyPair(dir, "ecdsa-p256", "release");
    ed25519 = cosignKeyPair(dir, "ed25519", "ci");
    stranger = cosignKeyPair(dir, "ecdsa-p256", "stranger");
  }, 180_000);
  afterAll(async () => {
    await front?.stop();
    await registry?.stop();
  });

  it.each([
    ["an ECDSA P-256 key, as the signature tag", "ecdsa", "tag"],
    ["an Ed25519 key, as the signature tag", "ed25519", "tag"],
    ["an ECDSA P-256 key, as a referrer in the referrers tag schema (distribution 2.8)", "ecdsa", "referrers"],
    ["an Ed25519 key, as a referrer in the referrers tag schema (distribution 2.8)", "ed25519", "referrers"],
  ] as const)(
    "verifies a signature by %s",
    async (_, which, form) => {
      const pair = which === "ecdsa" ? ecdsa : ed25519;
      const image = await pushImage(registry.host, `signed-${which}-${form}`);
      await cosignSign(pair, image, form, dir);
      const outcome = await verify(image, [trusted(stranger), trusted(pair)]);
      expect(outcome).toMatchObject({ kind: "verified", form, digest: image.split("@")[1] });
      expect(outcome.kind === "verified" && outcome.key.name).toBe(pair.publicKey);
    },
    120_000,
  );

  it("verifies a referrer found through the referrers API", async () => {
    // Pushed past the front (skopeo runs synchronously, the front answers from this process), signed and read through it.
    const image = (await pushImage(registry.host, "signed-api")).replace(registry.host, front.host);
    await cosignSign(ecdsa, image, "referrers", dir);
    // The front answered the push with OCI-Subject: cosign wrote no referrers tag schema index.
    const tagSchema = await new RegistrySource(parseRegistryReference(image), registryOptions).tagged(
      image.split("@")[1]!.replace(":", "-"),
    );
    expect(tagSchema).toBeUndefined();
    expect(await verify(image, [trusted(ecdsa)])).toMatchObject({ kind: "verified", form: "referrers" });
  }, 120_000);

  it("tells a missing signature, an unknown key and a re-pushed tag apart", async () => {
    const image = await pushImage(registry.host, "unsigned");
    expect(await verify(image, [trusted(ecdsa)])).toMatchObject({ kind: "missing" });
    await cosignSign(stranger, image, "tag", dir);
    expect(await verify(image, [trusted(ecdsa), trusted(ed25519)])).toMatchObject({ kind: "unknown-key", signatures: 1 });
    // The tag signed, then re-pushed with other content: the tag's new digest carries no signature.
    const signed = await pushImage(registry.host, "repushed");
    await cosignSign(ecdsa, signed, "tag", dir);
    expect(await verify(`${registry.host}/repushed:v1`, [trusted(ecdsa)])).toMatchObject({ kind: "verified" });
    buildImage(layout, "repushed-changed", { files: { "/captf/module/main.tf": "# changed\n" }, user: "65532" });
    push(layout, "repushed-changed", `${registry.host}/repushed:v1`);
    const repushed = await verify(`${registry.host}/repushed:v1`, [trusted(ecdsa)]);
    expect(repushed).toMatchObject({ kind: "missing" });
    expect(repushed.digest).not.toBe(signed.split("@")[1]);
  }, 180_000);

  it("refuses another digest's signature put under this digest's tag as invalid", async () => {
    const image = await pushImage(registry.host, "tampered", "v1");
    const other = await pushImage(registry.host, "tampered", "v2");
    await cosignSign(ecdsa, other, "tag", dir);
    // The other digest's signature manifest (same repository, so its blobs are there) pushed as this digest's signature tag.
    const source = new RegistrySource(parseRegistryReference(other), registryOptions);
    const signature = (await source.tagged(signatureTag(other.split("@")[1]!)))!;
    const put = await fetch(`http://${registry.host}/v2/tampered/manifests/${signatureTag(image.split("@")[1]!)}`, {
      method: "PUT",
      headers: { "content-type": signature.mediaType },
      body: signature.bytes,
    });
    expect(put.status).toBe(201);
    const outcome = await verify(image, [trusted(ecdsa)]);
    expect(outcome).toMatchObject({ kind: "invalid" });
    expect(outcome.kind === "invalid" && outcome.problems[0]).toContain(`the payload signs ${other.split("@")[1]}`);
  }, 180_000);

  it("reports image/signature from the command line, and nothing once the image is signed", async () => {
    const image = await pushImage(registry.host, "cli");
    const args = ["image", image, "--role", "machine", "--format", "json", "--key", ecdsa.publicKey];
    const unsigned = JSON.parse((await run(args)).stdout) as { findings: { id: string; message: string }[] };
    expect(unsigned.findings.filter((finding) => finding.id === "image/signature").map((finding) => finding.message)).toEqual([
      `SignatureMissing: ${image.split("@")[1]} has no cosign signature`,
    ]);
    await cosignSign(ecdsa, image, "tag", dir);
    const signed = JSON.parse((await run(args)).stdout) as { findings: { id: string }[] };
    expect(signed.findings.filter((finding) => finding.id === "image/signature")).toEqual([]);
  }, 180_000);
});
