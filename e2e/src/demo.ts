// `pnpm demo`: builds the missing tools, starts a management plane on this machine, installs
// Cluster API and captf, applies the demo cluster and shows its progress until it is Ready.
import { spawn } from "node:child_process";
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
docker-registry and patchelf. Exit codes: 0 ready (or stopped by Ctrl-C), 1 failed, 2 cannot start here.`;

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
  const missingDebian = imageTools.filter((tool) => !findTool(tool));
  if (missingDebian.length > 0) {
    console.error(
      `demo: missing ${missingDebian.join(", ")}: apt-get install -y ${missingDebian.map((tool) => debianTools[tool]).join(" ")}`,
    );
    return 2;
  }

  const say = (line: string) => out.write(`${line}\n`);
  if (!(await buildTools(say))) return 1;

  let plane: ManagementPlane | undefined;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return code;
    stopping = true;
    say("demo: stopping everything it started ...");
    await plane?.stop();
    return code;
  };
  const interrupted = new Promise<number>((resolve) => {
    const onSignal = () => resolve(stop(0));
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });

  try {
    say("demo: starting the management plane (control plane, registry and images, Cluster API, captf) ...");
    plane = await startManagementPlane({
      log: options.verbose ? (line) => say(`  ${line}`) : (line) => (/: done in /.test(line) ? say(`  ${line}`) : undefined),
    });
    const secrets = {
      credential: randomBytes(12).toString("hex"),
      variable: randomBytes(12).toString("hex"),
      bootstrap: randomBytes(12).toString("hex"),
    };
    const started = Date.now();
    await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
    say(`demo: applied e2e/manifests/demo (namespace ${demoNamespace}); waiting for Ready ...`);

    const outcome = await Promise.race([watchUntilReady(plane, out, timeoutSeconds * 1000), interrupted.then(() => undefined)]);
    if (outcome === undefined) return 0;
    if (!outcome.ready) {
      say(`demo: not Ready after ${timeoutSeconds} s; what is not:`);
      say(formatProgress(outcome.rows.filter((row) => !row.ready)));
      return await stop(1);
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (options["exit-when-ready"]) {
      await stop(0);
      say(`demo ready in ${seconds} s`);
      return 0;
    }
    say(`\ndemo: Ready in ${seconds} s. The management plane is up:`);
    say(`  export KUBECONFIG=${plane.kubeconfigPath}`);
    say(`  kubectl get clusters,machines,machinepools,terraformclusters,terraformmachines,terraformmachinepools -n ${demoNamespace}`);
    say(`  kubectl scale machinedeployment demo-md-0 -n ${demoNamespace} --replicas=5`);
    say(
      `  kubectl patch terraformcluster demo -n ${demoNamespace} --type=merge -p ` +
        `'{"spec":{"applyPolicy":"Manual","variables":{"control_plane_endpoint":{"host":"api.demo.example","port":6443}}}}'`,
    );
    say(`  kubectl get terraformcluster demo -n ${demoNamespace} -o jsonpath='{.status.plan}'   # then approve it:`);
    say(`  kubectl annotate terraformcluster demo -n ${demoNamespace} captf.io/approve-plan=<status.plan.hash>`);
    say("Ctrl-C stops everything.");
    return await interrupted;
  } catch (error) {
    console.error(`demo: ${(error as Error).message}`);
    return await stop(1);
  }
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
