import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { run, testdataDir } from "../cli.test-support.js";
import {
  addIndex,
  buildImage,
  describeWithImageTools,
  push,
  startRegistry,
  startTokenRegistry,
  type ImageSpec,
} from "./image-fixtures.test-support.js";

interface JsonReport {
  image: { ref: string; digest: string; platforms: string[] };
  findings: { id: string; severity: string; file: string; message: string }[];
  summary: { error: number; warning: number; info: number };
}

const machineModule = Object.fromEntries(
  readdirSync(join(testdataDir, "reference/good/machine"))
    .filter((f) => f.endsWith(".tf"))
    .map((f) => [`/captf/module/${f}`, readFileSync(join(testdataDir, "reference/good/machine", f), "utf8")]),
);

const runtime = { content: "#!/bin/sh\nexit 0\n", mode: 0o755 };
const goodLabels = {
  "io.captf.role": "machine",
  "io.captf.contract": "v1alpha1",
  "io.captf.runtime": "tofu",
  "io.captf.capacity": '{"cpu":"4","memory":"16Gi"}',
  "io.captf.node-info": '{"architecture":"amd64"}',
};

const good: ImageSpec = {
  files: { ...machineModule, "/captf/runtime": runtime, "/captf/providers/registry.opentofu.org/hashicorp/null/3.2.0.json": "{}" },
  user: "65532",
  labels: goodLabels,
};

const bad: ImageSpec = {
  files: {
    ...machineModule,
    "/captf/module/providers.tf": 'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws" }\n  }\n}\n',
    "/captf/module/secret.tf": { content: "locals {\n  x = 1\n}\n", mode: 0o600 },
    "/captf/runtime": { content: "#!/bin/sh\n", mode: 0o644 },
    "/captf/work/leftover": "x",
    "/captf/config/old": "x",
    "/captf/providers/registry.opentofu.org/hashicorp/aws/notes.txt": "x",
  },
  symlinks: { "/captf/module/passwd.tf": "/etc/passwd" },
  whiteouts: ["/captf/config"],
  user: "0",
  labels: { "io.captf.role": "cluster", "io.captf.contract": "v1alpha2", "io.captf.capacity": '{"cpu":"four"}' },
  entrypoint: "/bin/sh",
};

let layout = "";
let archive = "";

beforeAll(() => {
  layout = join(mkdtempSync(join(tmpdir(), "tfcapi-lint-images-")), "layout");
  buildImage(layout, "good", good);
  buildImage(layout, "bad", bad);
  buildImage(layout, "arm64", {
    ...good,
    architecture: "arm64",
    labels: { ...goodLabels, "io.captf.node-info": '{"architecture":"arm64"}' },
  });
  addIndex(layout, "multi", [
    { tag: "good", architecture: "amd64" },
    { tag: "arm64", architecture: "arm64" },
  ]);
  archive = join(layout, "..", "image.tar");
  execFileSync("tar", ["-cf", archive, "-C", layout, "."]);
}, 60_000);

function parse(stdout: string): JsonReport {
  return JSON.parse(stdout) as JsonReport;
}

function ids(report: JsonReport): string[] {
  return report.findings.map((f) => `${f.severity} ${f.id} ${f.file}`);
}

describeWithImageTools("image: OCI layouts and archives built with umoci", () => {
  it("passes a well-built machine image, with the module checks run on /captf/module", async () => {
    const result = await run(["image", `oci:${layout}:good`, "--role", "machine", "--strict", "--format", "json"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const report = parse(result.stdout);
    expect(report.image.platforms).toEqual(["linux/amd64"]);
    expect(report.image.digest).toMatch(/^sha256:[a-f0-9]{64}$/);
    expect(ids(report)).toEqual([]);
  });

  it("reports every image defect of a badly built one", async () => {
    const result = await run(["image", `oci:${layout}:bad`, "--role", "machine", "--format", "json"]);
    expect(result.code).toBe(1);
    const report = parse(result.stdout);
    expect(ids(report)).toEqual(
      [
        "error image/label-capacity ",
        "info image/entrypoint ",
        "error image/label-role ",
        "warning image/label-contract ",
        "warning image/user-root ",
        "error image/reserved-paths /captf/work",
        "error image/module-link /captf/module/passwd.tf",
        "error image/providers-layout /captf/providers/registry.opentofu.org/hashicorp/aws/notes.txt",
        "error image/providers-complete /captf/providers",
        "error image/runtime-present /captf/runtime",
      ].sort((a, b) => {
        const fa = a.split(" ")[2]!;
        const fb = b.split(" ")[2]!;
        return fa < fb ? -1 : fa > fb ? 1 : a.split(" ")[1]! < b.split(" ")[1]! ? -1 : 1;
      }),
    );
    expect(report.findings.find((f) => f.id === "image/providers-complete")!.message).toContain(
      "provider aws (registry.terraform.io/hashicorp/aws or registry.opentofu.org/hashicorp/aws)",
    );
    expect(report.findings.find((f) => f.id === "image/runtime-present")!.message).toContain("not executable");
  });

  it("checks that a numeric user can read the module", async () => {
    const result = await run(["image", `oci:${layout}:bad`, "--role", "cluster", "--format", "json"]);
    expect(parse(result.stdout).findings.map((f) => f.id)).not.toContain("image/module-readable");
    const dir = join(mkdtempSync(join(tmpdir(), "tfcapi-lint-user-")), "layout");
    buildImage(dir, "u", { ...bad, user: "65532", whiteouts: [] });
    const report = parse((await run(["image", `oci:${dir}:u`, "--role", "machine", "--format", "json"])).stdout);
    const readable = report.findings.find((f) => f.id === "image/module-readable")!;
    expect(readable.message).toBe("1 path(s) not readable or traversable by user 65532: /captf/module/secret.tf");
    expect(report.findings.filter((f) => f.id === "image/reserved-paths").map((f) => f.file)).toEqual(["/captf/config", "/captf/work"]);
  });

  it("picks the platform of a multi-platform index, or every one", async () => {
    const arm = parse((await run(["image", `oci:${layout}:multi`, "--role", "machine", "--platform", "linux/arm64", "--json"])).stdout);
    expect(arm.image.platforms).toEqual(["linux/arm64"]);
    const all = await run(["image", `oci:${layout}:multi`, "--role", "machine", "--all-platforms", "--json"]);
    const report = parse(all.stdout);
    expect(report.image.platforms).toEqual(["linux/amd64", "linux/arm64"]);
    expect(report.findings.map((f) => [f.severity, f.id, f.message])).toEqual([
      ["warning", "image/label-capacity", "the capacity labels differ between platforms: a template sizes nodes from one of them"],
    ]);
    const missing = await run(["image", `oci:${layout}:multi`, "--role", "machine", "--platform", "linux/s390x", "--json"]);
    expect(missing.code).toBe(1);
    expect(parse(missing.stdout).findings.map((f) => [f.id, f.message])).toEqual([
      ["image/platform", "the index has no manifest for linux/s390x (it has linux/amd64, linux/arm64)"],
    ]);
    const single = await run(["image", `oci:${layout}:good`, "--role", "machine", "--platform", "linux/arm64", "--json"]);
    expect(parse(single.stdout).findings.map((f) => f.message)).toEqual(["the image is for linux/amd64, not linux/arm64"]);
  });

  it("reads an OCI archive", async () => {
    const fromLayout = parse((await run(["image", `oci:${layout}:bad`, "--role", "machine", "--json"])).stdout);
    const fromArchive = parse((await run(["image", `oci-archive:${archive}:bad`, "--role", "machine", "--json"])).stdout);
    expect(fromArchive.findings).toEqual(fromLayout.findings);
    expect(fromArchive.image.digest).toBe(fromLayout.image.digest);
  });

  it("exits 2 for an image it cannot read, 3 for a reference it cannot parse", async () => {
    const missing = await run(["image", "oci:/no/such/layout", "--role", "machine"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read oci:/no/such/layout");
    const noTag = await run(["image", `oci:${layout}:nope`, "--role", "machine"]);
    expect(noTag.code).toBe(3);
    expect(noTag.stderr).toContain("has no tag nope");
    expect((await run(["image", `oci:${layout}`, "--role", "machine"])).code).toBe(3);
    expect((await run(["image", "Upper/Case:x", "--role", "machine"])).code).toBe(3);
    expect((await run(["image", `oci:${layout}:good`, "--role", "machine", "--platform", "linux"])).code).toBe(3);
    const corrupt = join(layout, "..", "corrupt");
    execFileSync("cp", ["-r", layout, corrupt]);
    const index = JSON.parse(readFileSync(join(corrupt, "index.json"), "utf8")) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    const digest = index.manifests.find((m) => m.annotations["org.opencontainers.image.ref.name"] === "good")!.digest;
    writeFileSync(join(corrupt, "blobs", "sha256", digest.slice(7)), "{}");
    const tampered = await run(["image", `oci:${corrupt}:good`, "--role", "machine"]);
    expect(tampered.code).toBe(2);
    expect(tampered.stderr).toContain("does not match digest");
  });
});

describeWithImageTools("image: registries on loopback", () => {
  let registry: { host: string; stop: () => Promise<void> } | undefined;
  afterAll(async () => registry?.stop());

  it("pulls from docker-registry over plain HTTP on loopback, an index and a tag", async () => {
    registry = await startRegistry();
    push(layout, "multi", `${registry.host}/noop/machine:multi`);
    push(layout, "bad", `${registry.host}/noop/machine:bad`);
    const multi = await run(["image", `${registry.host}/noop/machine:multi`, "--role", "machine", "--all-platforms", "--json"]);
    expect(multi.stderr).toBe("");
    expect(parse(multi.stdout).image.platforms).toEqual(["linux/amd64", "linux/arm64"]);
    const fromRegistry = parse((await run(["image", `${registry.host}/noop/machine:bad`, "--role", "machine", "--json"])).stdout);
    const fromLayout = parse((await run(["image", `oci:${layout}:bad`, "--role", "machine", "--json"])).stdout);
    expect(fromRegistry.findings).toEqual(fromLayout.findings);
    const byDigest = await run(["image", `${registry.host}/noop/machine@${fromRegistry.image.digest}`, "--role", "machine", "--json"]);
    expect(parse(byDigest.stdout).findings).toEqual(fromLayout.findings);
    const unknown = await run(["image", `${registry.host}/noop/other:v1`, "--role", "machine"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("answered 404");
  }, 60_000);

  it("gets a bearer token with the credentials of the auth file", async () => {
    const token = await startTokenRegistry(layout, "robot", "s3cret");
    try {
      const authFile = join(mkdtempSync(join(tmpdir(), "tfcapi-lint-auth-")), "auth.json");
      writeFileSync(authFile, JSON.stringify({ auths: { [token.host]: { auth: Buffer.from("robot:s3cret").toString("base64") } } }));
      const ok = await run(["image", `${token.host}/noop/machine:good`, "--role", "machine", "--strict", "--json"], {
        env: { REGISTRY_AUTH_FILE: authFile, HOME: "/nonexistent" },
      });
      expect(ok.stderr).toBe("");
      expect(ok.code).toBe(0);
      expect(token.requests.filter((r) => r === "GET /token")).toHaveLength(1);
      const anonymous = await run(["image", `${token.host}/noop/machine:good`, "--role", "machine"], { env: { HOME: "/nonexistent" } });
      expect(anonymous.code).toBe(2);
      expect(anonymous.stderr).toContain("the token service");
    } finally {
      await token.stop();
    }
  });

  it("exits 2 when nothing listens", async () => {
    const result = await run(["image", "127.0.0.1:1/noop/machine:v1", "--role", "machine"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("cannot reach 127.0.0.1:1");
  });
});
