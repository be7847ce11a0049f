// The README's one command, run as a user runs it: `captf-demo --exit-when-ready` brings the demo to
// Ready on its own plane, prints its last line, exits 0 and leaves nothing behind; without root
// it says so in one line and exits 2.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";

const demo = fileURLToPath(new URL("../bin/captf-demo.mjs", import.meta.url));
const planeDirectories = () => readdirSync(tmpdir()).filter((name) => name.startsWith("captf-e2e-plane-"));

it("answers --help and refuses a bad flag with exit 2", () => {
  const help = spawnSync(process.execPath, [demo, "--help"], { encoding: "utf8" });
  expect(help.status).toBe(0);
  expect(help.stdout).toMatch(/^Usage: pnpm demo \[--exit-when-ready\]/);
  expect(help.stdout).toMatch(/--timeout <s>/);
  const bad = spawnSync(process.execPath, [demo, "--no-such-flag"], { encoding: "utf8" });
  expect(bad.status).toBe(2);
  expect(bad.stderr).toMatch(/Unknown option '--no-such-flag'/);
});

it("says in one line that it needs root, and exits 2, when run as another user", () => {
  const run = spawnSync(process.execPath, [demo], { encoding: "utf8", uid: 65534, gid: 65534 });
  expect(run.status).toBe(2);
  expect(run.stderr.trim().split("\n")).toEqual([
    "demo: needs root: the chroot kubelet that runs captf's Pods mounts and chroots (run it with sudo)",
  ]);
});

describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "capi-manager", "go", "umoci", "skopeo", "docker-registry"],
  "pnpm demo --exit-when-ready",
  () => {
    it("brings the demo to Ready, prints 'demo ready in <s> s' last, exits 0 and removes what it started", () => {
      const before = planeDirectories();
      const run = spawnSync(process.execPath, [demo, "--exit-when-ready", "--timeout", "420"], { encoding: "utf8", timeout: 900_000 });
      const lines = run.stdout.trim().split("\n");
      if (run.status !== 0) throw new Error(`exit ${run.status ?? run.signal}\n${run.stdout}\n${run.stderr}`);
      expect(lines.at(-1)).toMatch(/^demo ready in \d+(\.\d+)? s$/);
      expect(lines.some((line) => /^ {2}tools: (etcd|tofu|kube|capi) \S+ cached$|^ {2}tools: built /.test(line))).toBe(true);
      expect(run.stdout).toMatch(/^Cluster\/demo\s+Provisioned\s+Ready$/m);
      expect(planeDirectories()).toEqual(before);
    }, 900_000);
  },
);
