import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "@jest/globals";
import { debianTools } from "./tools.js";

// tools/install.sh, the way the test command runs it: what it lists, and how it fails.
const installer = fileURLToPath(new URL("../../../tools/install.sh", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "captf-installer-"));
afterAll(() => {
  spawnSync("chmod", ["-R", "u+w", scratch]); // Go leaves its module cache read-only
  rmSync(scratch, { recursive: true, force: true });
});

function install(args: string[], env: NodeJS.ProcessEnv) {
  return spawnSync("bash", [installer, ...args], { encoding: "utf8", env: { ...process.env, ...env }, timeout: 60_000 });
}

describe("tools/install.sh", () => {
  it("lists every tool with its version from its go.mod", () => {
    const run = install(["--list"], { CAPTF_TOOLS_DIR: join(scratch, "empty") });
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^etcd\s+v3\.6\.\d+\s+missing/m);
    expect(run.stdout).toMatch(/^tofu\s+v1\.12\.\d+\s+missing/m);
    expect(run.stdout).toMatch(/^kube\s+v1\.36\.\d+\s+missing\s+\S+kube-apiserver/m);
    expect(run.stdout).toMatch(/^terraform\s+v1\.5\.7\s+missing\s+\S+\/bin\/terraform$/m);
    expect(run.stdout).toMatch(/^capi\s+v1\.14\.2\s+missing\s+\S+\/bin\/capi-manager$/m);
    expect(run.stdout).toMatch(/^capi\s+v1\.14\.2\s+missing\s+\S+\/bin\/clusterctl$/m);
    expect(run.stdout).toMatch(/^promtool\s+v0\.316\.0\s+missing\s+\S+\/promtool-v0\.316\.0\/bin\/promtool$/m);
    expect(run.stdout).toMatch(/^cosign\s+v2\.6\.5\s+missing\s+\S+\/cosign-v2\.6\.5\/bin\/cosign$/m);
    expect(run.stdout).toMatch(/^otelcol\s+v0\.161\.0\s+missing\s+\S+\/otelcol-v0\.161\.0\/bin\/otelcol$/m);
  });

  it("lists every Debian program the tests take from PATH, found or with its apt-get line", () => {
    const run = install(["--list"], { CAPTF_TOOLS_DIR: join(scratch, "empty") });
    for (const [program, debianPackage] of Object.entries(debianTools)) {
      expect(run.stdout).toMatch(
        new RegExp(`^${program}\\s+debian\\s+(found\\s+\\S+/${program}|missing\\s+apt-get install -y ${debianPackage})$`, "m"),
      );
    }
  });

  it("fails, naming the module and version, when Go is missing", () => {
    const run = install(["--only", "etcd"], { CAPTF_TOOLS_DIR: join(scratch, "no-go"), PATH: "/usr/bin:/bin" });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/'go' not found in PATH; it is needed to build etcd \(go\.etcd\.io\/etcd\/server\/v3@v3\.6\.\d+\)/);
  });

  it("fails for promtool as for the others, naming its module, version and command", () => {
    const run = install(["--only", "promtool"], {
      CAPTF_TOOLS_DIR: join(scratch, "no-proxy-promtool"),
      GOPROXY: "off",
      GOMODCACHE: join(scratch, "modcache"),
      GOFLAGS: "-mod=mod",
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(
      /downloading the modules of promtool \(github\.com\/prometheus\/prometheus@v0\.316\.0\) from GOPROXY=off failed/,
    );
    expect(run.stderr).toMatch(/command: \(cd .*tools\/promtool && .*go mod download\)/);
  });

  it("fails, naming the module, version and command, when the proxy cannot serve it", () => {
    const run = install(["--only", "etcd"], {
      CAPTF_TOOLS_DIR: join(scratch, "no-proxy"),
      GOPROXY: "off",
      GOMODCACHE: join(scratch, "modcache"),
      GOFLAGS: "-mod=mod",
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/downloading the modules of etcd \(go\.etcd\.io\/etcd\/server\/v3@v3\.6\.\d+\) from GOPROXY=off failed/);
    expect(run.stderr).toMatch(/command: \(cd .*tools\/etcd && .*go mod download\)/);
  });
});
