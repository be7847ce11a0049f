#!/usr/bin/env node
// The CPU one container launch of the chroot kubelet costs (its launch script: the root overlay, /proc, /dev, the
// volume bind mounts, the chroot) around /bin/true, spawned as the kubelet spawns it: what every container of a
// Job pays before its command runs (issue 35). The container has 8 volume mounts, 4 of them read-only, and a
// read-only root, over an overlay of this machine's root.
//
//   npx tsc -b && node bench/kubelet-launch.mjs [--launches 20]
//
// Needs root (mount namespaces, overlayfs, device nodes).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { launchScript, prepareDeviceTemplate } from "../packages/testkit/dist/kubelet.js";

const { values } = parseArgs({ options: { launches: { type: "string", default: "20" } } });
const launches = Number(values.launches);
const programs = ["sh", "env", "unshare", "mount", "mkdir", "mknod", "touch", "cp", "hostname", "setpriv"];
const bin = Object.fromEntries(
  programs.map((name) => [name, execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim()]),
);
const work = mkdtempSync(join(tmpdir(), "captf-launch-bench-"));
try {
  const devices = join(work, "devices");
  prepareDeviceTemplate(devices, bin.mknod);
  const mounts = Array.from({ length: 8 }, (_, index) => {
    const source = join(work, `volume-${index}`);
    mkdirSync(source);
    return { source, target: `/captf-bench/volume-${index}`, readOnly: index % 2 === 0, file: false };
  });
  let cpuSeconds = 0;
  for (let launch = 0; launch < launches; launch++) {
    const dir = join(work, `container-${launch}`);
    for (const part of ["upper", "work", "merged"]) mkdirSync(join(dir, part), { recursive: true });
    const overlay = { lower: "/", upper: join(dir, "upper"), work: join(dir, "work"), merged: join(dir, "merged") };
    const script = launchScript(
      {
        root: { overlay },
        devices,
        mounts,
        readOnlyRoot: true,
        hostname: "bench",
        workingDir: "/",
        workingDirInRoot: "/",
        env: [["PATH", "/usr/bin:/bin"]],
        argv: ["/bin/true"],
      },
      bin,
    );
    const unshare = [bin.unshare, "--mount", "--propagation", "private", "--pid", "--uts", "--fork", "--kill-child", "--"];
    // GNU time's user and system seconds of the launch and everything it ran.
    const run = spawnSync("/usr/bin/time", ["-f", "%U %S", ...unshare, bin.sh, "-c", script], { encoding: "utf8" });
    if (run.status !== 0) throw new Error(`launch ${launch} failed: ${run.stderr}`);
    const [user, system] = run.stderr.trim().split("\n").pop().split(" ").map(Number);
    cpuSeconds += user + system;
  }
  console.log(
    `one container launch: ${((cpuSeconds / launches) * 1000).toFixed(1)} ms of CPU (mean of ${launches}); ` +
      `load average ${loadavg()
        .map((load) => load.toFixed(1))
        .join(" ")}`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
