// `captf-module push` against a real registry (Debian's docker-registry, distribution 2.8, on loopback): a
// two-platform index built with umoci, pushed, and read back by the contract's registry client and by skopeo with
// the same digest. The testkit's registry has no auth of its own, so a basic-auth gate in this process stands in
// front of a second one for the credentials cases (Docker config file, environment, refused).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { parseRegistryReference, RegistrySource } from "@captf/contract/oci";
import { addIndex, buildImage, describeWithTools, startLocalRegistry, type LocalRegistry } from "@captf/testkit";
import { main } from "../cli.js";
import type { PushReport } from "./registry-push.js";

async function captfModule(argv: string[], env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const io = { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, env };
  const code = await main(argv, { ...io, cwd: tmpdir() });
  return { code, stdout, stderr };
}

/** A plain-HTTP proxy to `upstream` that answers 401 with a Basic challenge unless the request carries user:password. */
async function basicAuthGate(upstream: string, user: string, password: string): Promise<{ host: string; server: Server }> {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const [hostname, port] = upstream.split(":");
  const server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="captf-test"', "content-type": "application/json" });
      res.end('{"errors":[{"code":"UNAUTHORIZED"}]}');
      return;
    }
    const headers = { ...req.headers, host: upstream };
    delete headers.authorization;
    const forward = request({ hostname, port: Number(port), method: req.method, path: req.url, headers }, (answer) => {
      const location = answer.headers.location?.replace(upstream, (req.headers.host as string) ?? upstream);
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, ...(location ? { location } : {}) });
      answer.pipe(res);
    });
    forward.on("error", () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { host: `127.0.0.1:${typeof address === "object" && address ? address.port : 0}`, server };
}

describeWithTools(["docker-registry", "umoci", "skopeo"], "captf-module push", () => {
  let work: string;
  let layout: string;
  let indexDigest: string;
  let registry: LocalRegistry;
  let gated: LocalRegistry;
  let gate: { host: string; server: Server };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "captf-module-push-"));
    layout = join(work, "image");
    for (const architecture of ["amd64", "arm64"])
      buildImage(layout, `v1-${architecture}`, {
        files: { "/captf/module/main.tf": `# ${architecture}\n`, "/captf/runtime": { content: `#!${architecture}\n`, mode: 0o755 } },
        user: "65532:65532",
        labels: { "io.captf.role": "machine" },
        architecture,
      });
    addIndex(layout, "v1", [
      { tag: "v1-amd64", architecture: "amd64" },
      { tag: "v1-arm64", architecture: "arm64" },
    ]);
    const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as {
      manifests: { digest: string; annotations?: Record<string, string> }[];
    };
    indexDigest = index.manifests.find((m) => m.annotations?.["org.opencontainers.image.ref.name"] === "v1")!.digest;
    registry = await startLocalRegistry();
    gated = await startLocalRegistry();
    gate = await basicAuthGate(gated.host, "alice", "s3cret");
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => gate?.server.close(resolve));
    await registry?.stop();
    await gated?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("pushes the index and both platforms with --plain-http, reporting the layout's digest as JSON", async () => {
    const pushed = await captfModule(["push", `${layout}:v1`, `${registry.host}/modules/my-machine:v0.1.0`, "--plain-http", "-o", "json"]);
    expect([pushed.code, pushed.stderr]).toEqual([0, ""]);
    const result = JSON.parse(pushed.stdout) as PushReport;
    expect(result).toMatchObject({
      digest: indexDigest,
      destination: `${registry.host}/modules/my-machine:v0.1.0`,
      mediaType: "application/vnd.oci.image.index.v1+json",
      credentials: "none (anonymous)",
    });
    expect(result.platforms.map((p) => p.platform)).toEqual(["linux/amd64", "linux/arm64"]);
    expect(result.blobs.pushed).toBeGreaterThanOrEqual(4);
    expect(result.blobs.present).toBe(0);
  });

  it("reads back with the same digest: the contract's registry client and skopeo", async () => {
    const source = new RegistrySource(parseRegistryReference(`${registry.host}/modules/my-machine:v0.1.0`), {
      insecure: true,
      credentials: undefined,
      credentialsOrigin: "none",
    });
    const root = await source.root();
    expect(root.digest).toBe(indexDigest);
    const index = JSON.parse(root.bytes.toString("utf8")) as { manifests: { digest: string; mediaType: string; size: number }[] };
    for (const manifest of index.manifests) expect((await source.manifest(manifest)).digest).toBe(manifest.digest);
    const raw = execFileSync("skopeo", ["inspect", "--raw", "--tls-verify=false", `docker://${registry.host}/modules/my-machine:v0.1.0`]);
    expect(`sha256:${createHash("sha256").update(raw).digest("hex")}`).toBe(indexDigest);
    const ref = `docker://${registry.host}/modules/my-machine:v0.1.0`;
    const arm = execFileSync("skopeo", ["inspect", "--tls-verify=false", "--override-arch", "arm64", ref]);
    expect(JSON.parse(arm.toString("utf8"))).toMatchObject({ Architecture: "arm64", Labels: { "io.captf.role": "machine" } });
  });

  it("pushes again to another tag without uploading a blob the registry has", async () => {
    const destination = `docker://${registry.host}/modules/my-machine:latest`;
    const again = await captfModule(["push", `oci:${layout}:v1`, destination, "--plain-http", "-o", "json"]);
    expect(again.code).toBe(0);
    const result = JSON.parse(again.stdout) as PushReport;
    expect(result.digest).toBe(indexDigest);
    expect(result.blobs).toMatchObject({ pushed: 0, bytes: 0 });
    expect(result.blobs.present).toBeGreaterThanOrEqual(4);
  });

  it("refuses to speak plain HTTP unasked, naming --plain-http", async () => {
    const refused = await captfModule(["push", `${layout}:v1`, `${registry.host}/modules/other:v1`]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/cannot reach https:\/\/127\.0\.0\.1:\d+.*does not speak HTTPS.*pass --plain-http/);
  });

  it("pushes with the auths entry of $DOCKER_CONFIG/config.json to a registry behind basic auth", async () => {
    const dockerConfig = join(work, "docker");
    mkdirSync(dockerConfig, { recursive: true });
    const auth = Buffer.from("alice:s3cret").toString("base64");
    writeFileSync(join(dockerConfig, "config.json"), JSON.stringify({ auths: { [gate.host]: { auth } } }));
    const pushed = await captfModule(["push", `${layout}:v1`, `${gate.host}/m:v1`, "--plain-http", "-o", "json"], {
      DOCKER_CONFIG: dockerConfig,
    });
    expect([pushed.code, pushed.stderr]).toEqual([0, ""]);
    expect(JSON.parse(pushed.stdout)).toMatchObject({ digest: indexDigest, credentials: join(dockerConfig, "config.json") });
    const source = new RegistrySource(parseRegistryReference(`${gate.host}/m:v1`), {
      insecure: true,
      credentials: { username: "alice", password: "s3cret" },
      credentialsOrigin: "test",
    });
    expect((await source.root()).digest).toBe(indexDigest);
  });

  it("pushes with CAPTF_REGISTRY_USERNAME and CAPTF_REGISTRY_PASSWORD, and prints the digest as text", async () => {
    const env = { HOME: work, CAPTF_REGISTRY_USERNAME: "alice", CAPTF_REGISTRY_PASSWORD: "s3cret" };
    const pushed = await captfModule(["push", `${layout}:v1`, `${gate.host}/m:v2`, "--plain-http"], env);
    expect([pushed.code, pushed.stderr]).toEqual([0, ""]);
    expect(pushed.stdout).toContain(`= ${indexDigest}`);
    expect(pushed.stdout).toContain(`use it as spec.source.image: ${gate.host}/m@${indexDigest}`);
  });

  it("says the registry refused, and where it looked, without credentials or with wrong ones", async () => {
    const anonymous = await captfModule(["push", `${layout}:v1`, `${gate.host}/m:v3`, "--plain-http"], { HOME: work });
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toMatch(/refused a push to m \(401, it asks for a username and password\): no credentials were found/);
    const wrong = await captfModule(["push", `${layout}:v1`, `${gate.host}/m:v3`, "--plain-http"], {
      CAPTF_REGISTRY_USERNAME: "alice",
      CAPTF_REGISTRY_PASSWORD: "wrong",
    });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/refused a push to m \(401\): the credentials from CAPTF_REGISTRY_USERNAME\/\w+ were refused/);
  });

  it("names the tags a layout has when the one asked for is not there", async () => {
    const missing = await captfModule(["push", `${layout}:v9`, `${registry.host}/m:v9`, "--plain-http"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/has no image tagged v9 \(it has: v1-amd64, v1-arm64, v1\)/);
  });
});
