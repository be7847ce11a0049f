// The README's one command, run as a user runs it: `captf-demo` brings the demo to Ready on its own
// plane, every command it then prints works there, and Ctrl-C exits 0 leaving nothing behind;
// without root it says so in one line and exits 2.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";
import { planHashPlaceholder } from "./demo.js";

const demo = fileURLToPath(new URL("../bin/captf-demo.mjs", import.meta.url));
const planeDirectories = (dir: string) => readdirSync(dir).filter((name) => name.startsWith("captf-e2e-plane-"));

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

it("installs missing Debian programs with apt-get as root, and names the command when that fails", () => {
  // apt-get stands in for Debian's here: it records its calls, and its install fails.
  const bin = mkdtempSync(join(tmpdir(), "captf-demo-apt-"));
  try {
    const calls = join(bin, "calls");
    writeFileSync(
      join(bin, "apt-get"),
      `#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> ${calls}\n[ "$1" = update ] || { echo "E: Unable to locate package" >&2; exit 100; }\n`,
      { mode: 0o755 },
    );
    const run = spawnSync(process.execPath, [demo], { encoding: "utf8", env: { ...process.env, PATH: bin } });
    expect(run.status).toBe(2);
    expect(readFileSync(calls, "utf8").trim().split("\n")).toEqual([
      "noninteractive update -qq",
      "noninteractive install -y -qq umoci skopeo docker-registry patchelf",
    ]);
    expect(run.stdout).toMatch(/^demo: installing Debian packages: umoci skopeo docker-registry patchelf \(apt-get\) \.\.\.$/m);
    expect(run.stderr.trim()).toBe(
      "demo: could not install umoci, skopeo, docker-registry, patchelf (E: Unable to locate package): " +
        "apt-get install -y umoci skopeo docker-registry patchelf",
    );
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
});

describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "capi-manager", "go", "umoci", "skopeo", "docker-registry"],
  "pnpm demo",
  () => {
    it("brings the demo to Ready, every command it prints works on the plane, Ctrl-C exits 0 removing what it started", async () => {
      // A TMPDIR of its own: other planes on this machine (a bench, another suite) come and go in the shared one.
      const temp = mkdtempSync(join(tmpdir(), "captf-demo-tmp-"));
      // Its own process group, as in a terminal: Ctrl-C reaches the demo and every program it started.
      const child = spawn(process.execPath, [demo, "--timeout", "420"], {
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, TMPDIR: temp },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
      try {
        await Promise.race([
          until(() => stdout.includes("Ctrl-C stops everything.")),
          exited.then((code) => Promise.reject(new Error(`exit ${code} before Ready\n${stdout}\n${stderr}`))),
        ]);
        expect(stdout.split("\n").some((line) => /^ {2}tools: (etcd|tofu|kube|capi) \S+ cached$|^ {2}tools: built /.test(line))).toBe(true);
        expect(stdout).toMatch(/^Cluster\/demo\s+Provisioned\s+Ready$/m);
        await runPrintedCommands(printedCommands(stdout));
        // The plane's directory is in this TMPDIR while it runs, so its absence afterwards says something.
        expect(planeDirectories(temp)).toHaveLength(1);
      } finally {
        if (child.exitCode === null) process.kill(-child.pid!, "SIGINT");
      }
      const code = await exited;
      if (code !== 0) throw new Error(`exit ${code} after Ctrl-C\n${stdout}\n${stderr}`);
      expect(stdout.trim().split("\n").at(-1)).toBe("demo: stopping everything it started ...");
      expect(planeDirectories(temp)).toEqual([]);
      // The control plane's own directory (etcd's data, certificates, the token file) is the kubeconfig's.
      const kubeconfig = /^ {2}export KUBECONFIG=(\S+)$/m.exec(stdout)?.[1];
      expect(kubeconfig?.startsWith(`${temp}/`)).toBe(true);
      expect(kubeconfig && existsSync(dirname(kubeconfig))).toBe(false);
      rmSync(temp, { recursive: true, force: true });
    }, 900_000);
  },
);

/** The commands printed between "The management plane is up; try:" and "Ctrl-C stops everything.", without their comments. */
function printedCommands(stdout: string): string[] {
  const block = stdout.slice(stdout.indexOf("The management plane is up; try:"), stdout.indexOf("Ctrl-C stops everything."));
  return block
    .split("\n")
    .slice(1)
    .filter((line) => line.startsWith("  "))
    .map((line) => line.replace(/\s+# .*$/, "").trim());
}

/**
 * Runs each printed command as a user would, in order, in bash with the exports before it: `plan
 * show` until the plan is made, and the approval with the hash it printed. Checks what each did.
 */
async function runPrintedCommands(commands: string[]): Promise<void> {
  expect(commands.map((command) => command.split(" ").slice(0, 3).join(" "))).toEqual([
    expect.stringMatching(/^export KUBECONFIG=/),
    expect.stringMatching(/^export PATH=/),
    "kubectl get clusters,machines,machinepools,terraformclusters,terraformmachines,terraformmachinepools",
    "kubectl scale machinedeployment",
    "kubectl patch terraformcluster",
    "kubectl captf plan",
    "kubectl captf plan",
  ]);
  const exports = commands.filter((command) => command.startsWith("export "));
  const bash = (command: string) => spawnSync("bash", ["-c", [...exports, command].join("\n")], { encoding: "utf8", timeout: 60_000 });
  const succeed = (command: string) => {
    const run = bash(command);
    if (run.status !== 0) throw new Error(`${command}: exit ${run.status}\n${run.stdout}\n${run.stderr}`);
    return run.stdout;
  };
  let planHash = "";
  for (const command of commands.filter((line) => !line.startsWith("export "))) {
    if (command.startsWith("kubectl captf plan show")) {
      await until(() => bash(command).status === 0, 240_000);
      planHash = /--hash (\S+)/.exec(succeed(command))?.[1] ?? "";
      expect(planHash).toMatch(/\S/);
    } else if (command.includes(planHashPlaceholder)) {
      expect(succeed(command.replace(planHashPlaceholder, planHash))).toMatch(new RegExp(`^approved plan ${escape(planHash)} of `));
    } else succeed(command);
  }
  expect(succeed("kubectl get machinedeployment demo-md-0 -n demo -o jsonpath='{.spec.replicas}'")).toBe("5");
  expect(succeed("kubectl get terraformcluster demo -n demo -o jsonpath='{.metadata.annotations.captf\\.io/approve-plan}'")).toBe(planHash);
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

async function until(condition: () => boolean, timeoutMillis = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
