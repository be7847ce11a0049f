// `pnpm demo`: builds the missing tools, starts a management plane on this machine, installs
// Cluster API and captf, applies the demo cluster and shows its progress until it is Ready.
import { spawn } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { debianTools, findTool } from "@captf/testkit/plane";
import { randomBytes } from "node:crypto";
import { applyObjects } from "./apply.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables } from "./demo-objects.js";
import { startManagementPlane, type ManagementPlane } from "./management-plane.js";
import { formatProgress, readProgress, type Progress } from "./progress.js";

const usage = `Usage: pnpm demo [--exit-when-ready] [--timeout <seconds>] [--verbose]

Starts a Cluster API management plane on this machine (etcd, kube-apiserver,
kube-controller-manager, Cluster API's core manager, a chroot kubelet and a loopback
registry), installs captf from its manifests, applies the demo (one cluster, a
MachineDeployment of 3 and a MachinePool of 3 on the no-op modules) and shows each
object's progress until everything is Ready. Then it prints the kubeconfig and a few
commands to try, and stays up until Ctrl-C, when it stops everything it started.

Options:
  --exit-when-ready   tear down and exit 0 once Ready; the last line is "demo ready in <s> s"
  --timeout <s>       give up after this many seconds waiting for Ready (default 600)
  --verbose           print every step of the plane (kubelet, stand-ins, images)
  -h, --help          this text

Needs root (the chroot kubelet mounts and chroots), Go (tools are built from the Go
module proxy into ~/.cache/captf/tools on first use), and Debian's umoci, skopeo,
docker-registry and patchelf (installed with apt-get when missing). The plane's files
(etcd data, certificates, a token file, images) live in $TMPDIR/captf-plane-* and
$TMPDIR/captf-e2e-plane-*, removed when it stops. Exit codes: 0 ready (or stopped by
Ctrl-C), 1 failed, 2 cannot start here.`;

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const demoTools = ["etcd", "tofu", "kube", "capi"] as const;
/** The Debian programs the images are built and served with (patchelf: the runner bundle's node). */
const imageTools = ["umoci", "skopeo", "docker-registry", "patchelf"] as const;

export async function runDemo(argv: readonly string[], out: NodeJS.WriteStream = process.stdout): Promise<number> {
  let options;
  try {
    options = parseArgs({
      args: [...argv],
      options: {
        "exit-when-ready": { type: "boolean" },
        timeout: { type: "string", default: "600" },
        verbose: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }).values;
  } catch (error) {
    console.error(`demo: ${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  if (options.help) {
    out.write(`${usage}\n`);
    return 0;
  }
  const timeoutSeconds = Number(options.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    console.error(`demo: --timeout must be a positive number of seconds, not "${options.timeout}"`);
    return 2;
  }
  if (process.getuid?.() !== 0) {
    console.error("demo: needs root: the chroot kubelet that runs captf's Pods mounts and chroots (run it with sudo)");
    return 2;
  }
  const say = (line: string) => out.write(`${line}\n`);
  const missingDebian = imageTools.filter((tool) => !findTool(tool));
  if (
    missingDebian.length > 0 &&
    !(await installDebianPackages(
      missingDebian.map((tool) => debianTools[tool]),
      say,
    ))
  )
    return 2;
  if (!(await buildTools(say))) return 1;

  // Ctrl-C reaches the plane's programs too (one process group); every signal, a second one
  // included, only starts or awaits the stop, so the plane's directory is always removed.
  let signalled: () => void = () => {};
  const interrupted = new Promise<undefined>((resolve) => (signalled = () => resolve(undefined)));
  const onSignal = () => signalled();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  let plane: ManagementPlane | undefined;
  const stopPlane = async () => {
    const started = plane;
    plane = undefined;
    if (!started) return;
    say("demo: stopping everything it started ...");
    await started.stop();
  };
  try {
    say("demo: starting the management plane (control plane, registry and images, Cluster API, captf) ...");
    const starting = startManagementPlane({
      log: options.verbose ? (line) => say(`  ${line}`) : (line) => (/: done in /.test(line) ? say(`  ${line}`) : undefined),
    });
    plane = await Promise.race([starting, interrupted]);
    if (plane === undefined) {
      // A plane that fails to start stops itself; one that starts is stopped in finally.
      say("demo: interrupted while starting; stopping what started ...");
      plane = await starting.catch(() => undefined);
      return 0;
    }
    const secrets = {
      credential: randomBytes(12).toString("hex"),
      variable: randomBytes(12).toString("hex"),
      bootstrap: randomBytes(12).toString("hex"),
    };
    const started = Date.now();
    await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
    say(`demo: applied e2e/manifests/demo (namespace ${demoNamespace}); waiting for Ready ...`);

    const outcome = await Promise.race([watchUntilReady(plane, out, timeoutSeconds * 1000), interrupted]);
    if (outcome === undefined) return 0;
    if (!outcome.ready) {
      say(`demo: not Ready after ${timeoutSeconds} s; what is not:`);
      say(formatProgress(outcome.rows.filter((row) => !row.ready)));
      return 1;
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (options["exit-when-ready"]) {
      await stopPlane();
      say(`demo ready in ${seconds} s`);
      return 0;
    }
    say(`\ndemo: Ready in ${seconds} s. The management plane is up; try:`);
    for (const command of commandsToTry(plane.kubeconfigPath, linkKubectlPlugin(plane.workDir))) say(`  ${command}`);
    say("Ctrl-C stops everything.");
    await interrupted;
    return 0;
  } catch (error) {
    console.error(`demo: ${(error as Error).message}`);
    return 1;
  } finally {
    await stopPlane();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** What the hash placeholder of the printed approval stands for: the hash `plan show` prints. */
export const planHashPlaceholder = "<hash plan show printed>";

/**
 * The commands the demo prints once Ready, in order, each runnable as printed (the hash of the
 * approval excepted): inspect, scale, change the no-op cluster's `notes` under a Manual apply
 * policy, then review and approve the plan with the kubectl plugin.
 */
export function commandsToTry(kubeconfigPath: string, pluginDir: string): string[] {
  const n = `-n ${demoNamespace}`;
  return [
    `export KUBECONFIG=${kubeconfigPath}`,
    `export PATH=${pluginDir}:$PATH   # kubectl captf`,
    `kubectl get clusters,machines,machinepools,terraformclusters,terraformmachines,terraformmachinepools ${n}`,
    `kubectl scale machinedeployment demo-md-0 ${n} --replicas=5`,
    `kubectl patch terraformcluster demo ${n} --type=merge -p '{"spec":{"applyPolicy":"Manual","variables":{"notes":"changed by hand"}}}'`,
    `kubectl captf plan show terraformcluster/demo ${n}   # once the plan is made: the change waiting for approval`,
    `kubectl captf plan approve terraformcluster/demo ${n} --hash ${planHashPlaceholder}`,
  ];
}

/** A directory holding `kubectl-captf`, the name kubectl looks for, linked to this checkout's plugin; removed with the plane. */
function linkKubectlPlugin(workDir: string): string {
  const dir = join(workDir, "bin");
  mkdirSync(dir, { recursive: true });
  symlinkSync(`${repoRoot}packages/kubectl-captf/bin/kubectl-captf.js`, join(dir, "kubectl-captf"));
  return dir;
}

/** Installs missing Debian packages with apt-get, as scripts/test.sh does; false, with the command to run, when it cannot. */
async function installDebianPackages(packages: readonly string[], say: (line: string) => void): Promise<boolean> {
  const command = `apt-get install -y ${packages.join(" ")}`;
  say(`demo: installing Debian packages: ${packages.join(" ")} (apt-get) ...`);
  const aptGet = (args: string[]) =>
    new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn("apt-get", args, {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      });
      let output = "";
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      child.on("error", (error) => resolve({ code: null, output: error.message }));
      child.on("close", (code) => resolve({ code, output }));
    });
  const update = await aptGet(["update", "-qq"]);
  const install = update.code === 0 ? await aptGet(["install", "-y", "-qq", ...packages]) : update;
  if (install.code === 0) return true;
  console.error(`demo: could not install ${packages.join(", ")} (${install.output.trim().split("\n").at(-1)}): ${command}`);
  return false;
}

/** Runs tools/install.sh for what the demo needs, one progress line per tool. */
function buildTools(say: (line: string) => void): Promise<boolean> {
  const args = demoTools.flatMap((tool) => ["--only", tool]);
  say(`demo: tools (${demoTools.join(", ")}): building what is not cached yet ...`);
  return new Promise((resolve) => {
    const child = spawn("bash", [`${repoRoot}tools/install.sh`, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let output = "";
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      for (const line of chunk.split("\n")) if (/^tools: (building|built|\S+ \S+ cached)/.test(line)) say(`  ${line}`);
    });
    child.on("exit", (code) => {
      if (code !== 0) say(`demo: tools/install.sh failed (exit ${code}):\n${output.trim().split("\n").slice(-15).join("\n")}`);
      resolve(code === 0);
    });
  });
}

/** Redraws the progress table (in place on a terminal, as changed lines otherwise) until Ready or the deadline. */
async function watchUntilReady(plane: ManagementPlane, out: NodeJS.WriteStream, timeoutMillis: number): Promise<Progress> {
  const deadline = Date.now() + timeoutMillis;
  let previous = "";
  let drawnLines = 0;
  for (;;) {
    const progress = await readProgress(plane.kubeConfig, demoNamespace, demoClusterName).catch(
      () => ({ rows: [], ready: false }) as Progress,
    );
    const table = formatProgress(progress.rows);
    if (out.isTTY) {
      if (drawnLines > 0) out.write(`\x1b[${drawnLines}A\x1b[J`);
      out.write(`${table}\n`);
      drawnLines = table.split("\n").length;
    } else if (table !== previous) {
      out.write(`${table}\n\n`);
    }
    previous = table;
    if (progress.ready || Date.now() > deadline) return progress;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
