// The command line: yargs for parsing and --help; every command is a function of (io, options)
// returning the exit code, so tests run the CLI in-process through main().
import { resolve } from "node:path";
import { roles, type Role } from "@captf/contract/roles";
import { runtimes as inputRuntimes, type Runtime } from "tfcapi-lint";
import type { Argv } from "yargs";
import { CommandError, exitCodes, outputFormats, UsageError, type CliIo, type OutputFormat } from "./io.js";
import { runtimeNames, type RuntimeName } from "./build/runtime.js";

const exitCodeHelp = `Exit codes:
0: done
1: the command failed (a refused directory, a failed build); the message names what and the fix
3: a usage error: a bad flag, role or value`;

function outputOption<T>(y: Argv<T>) {
  return y.option("output", {
    alias: "o",
    choices: outputFormats,
    default: "text" as OutputFormat,
    describe: "text, or json: one document describing what was done",
  });
}

/** `init [dir]`: the directory, role, runtime and --force. */
function initCommandOptions<T>(y: Argv<T>) {
  return outputOption(y)
    .positional("dir", { type: "string", default: ".", describe: "the module directory: absent or empty (see --force)" })
    .option("role", { choices: roles, demandOption: true, describe: "the role the module plays: cluster, machine or machinepool" })
    .option("runtime", {
      choices: inputRuntimes,
      default: "tofu" as Runtime,
      describe: "the runtime inputs.tf's header names (both read the same declarations)",
    })
    .option("force", {
      type: "boolean",
      default: false,
      describe: "write into a directory that has entries: the skeleton's files replace files of the same name, others stay",
    })
    .usage(
      "Usage: $0 init [dir] --role <role> [--force] [-o json]\n\n" +
        "Writes a module skeleton that passes `tfcapi-lint module --strict` as generated: inputs.tf (the role's contract " +
        "inputs, as `tfcapi-lint inputs` prints them: keep it unedited), outputs.tf (every contract output), main.tf " +
        "(terraform_data standing in for your cloud's resources), versions.tf (Terraform 1.5+ and OpenTofu), " +
        "tests/<role>.tftest.hcl (`tofu test`, no provider needed), README.md and .gitignore. A directory that has " +
        "entries is refused unless --force.\n\n" +
        exitCodeHelp,
    )
    .example("$0 init --role machine ./my-machine", "a machine module in a new directory")
    .example("$0 init --role machinepool .", "a pool module in the (empty) current directory");
}

/** `build [dir]`: the runtimes, where the image goes, providers and labels. */
function buildCommandOptions<T>(y: Argv<T>) {
  return outputOption(y)
    .positional("dir", { type: "string", default: ".", describe: "the module directory" })
    .option("runtime", {
      type: "string",
      array: true,
      default: [] as string[],
      describe:
        "a tofu or terraform binary, [linux/<arch>=]<path>; " +
        "once per platform (linux/amd64, linux/arm64), the platform read from the binary",
    })
    .option("runtime-from", {
      type: "string",
      describe:
        "instead of --runtime: an existing module image (<registry>/<name>:<tag>, or oci:<layout>:<tag>) " +
        "whose /captf/runtime each platform ships",
    })
    .option("out", { type: "string", describe: "the OCI layout directory to build into (created, or added to); optional with --push" })
    .option("tag", {
      type: "string",
      describe: "the tag of the image index; each platform's image is <tag>-<arch> (default with --push: its tag)",
    })
    .option("push", {
      type: "string",
      describe: "build straight into a registry: <registry>/<repository>:<tag> (credentials as push finds them)",
    })
    .option("plain-http", {
      type: "boolean",
      default: false,
      describe: "speak plain HTTP to the registries of --push and --runtime-from (a local one)",
    })
    .option("providers", {
      type: "string",
      describe:
        "a filesystem provider mirror (as `tofu providers mirror` writes it) holding the locked providers; " +
        "without it they are fetched from their registries",
    })
    .option("role", { choices: roles, describe: "the role (default: read from the module's contract inputs)" })
    .option("runtime-name", { choices: runtimeNames, describe: "which runtime the binaries are, when none of them runs on this machine" })
    .option("runtime-version", { type: "string", describe: "their release, when none of them runs on this machine" })
    .option("name", { type: "string", describe: "org.opencontainers.image.title (default: the directory's name)" })
    .option("version", { type: "string", describe: "org.opencontainers.image.version (default: the tag)" })
    .option("source", { type: "string", describe: "org.opencontainers.image.source: where the module's code lives" })
    .option("revision", { type: "string", describe: "org.opencontainers.image.revision: the module's commit" })
    .option("label", {
      type: "string",
      array: true,
      default: [] as string[],
      describe: "another label, key=value (repeatable); it wins over the built-in ones",
    })
    .usage(
      "Usage: $0 build [dir] (--runtime <path>... | --runtime-from <image>) (--out <oci-layout> --tag <tag> | --push <ref>) " +
        "[--providers <mirror>] [-o json]\n\n" +
        "Builds one image per runtime binary given (linux/amd64, linux/arm64), without a container engine (umoci), as the " +
        "captf image contract asks: the module at /captf/module, the runtime at /captf/runtime, the providers the module's " +
        ".terraform.lock.hcl pins at /captf/providers (checked against its hashes), user 65532:65532, the io.captf.* and " +
        "org.opencontainers.image.* labels, a CycloneDX SBOM at /usr/share/doc/captf/sbom.cdx.json. Every time in it is " +
        "SOURCE_DATE_EPOCH, else the module's last commit, else 1970: two builds of the same inputs give one digest.\n\n" +
        "--runtime-from takes the runtime binaries (and their release, from the io.captf.runtime labels) out of an image " +
        "built before, per platform it has. --push builds into a temporary layout and pushes it, as push does.\n\n" +
        "Or later: captf-module push <oci-layout>:<tag> <registry>/<name>:<tag>\n\n" +
        exitCodeHelp,
    )
    .example("$0 build --runtime $(command -v tofu) --out ./image --tag v0.1.0", "this machine's platform")
    .example(
      "$0 build --runtime ./tofu-amd64 --runtime ./tofu-arm64 --providers ~/mirror --out ./image --tag v0.1.0",
      "both platforms, providers from a mirror",
    )
    .example(
      "$0 build --runtime-from ghcr.io/captf-io/noop-machine:v0.1.0 --push registry.example.com/m:v0.2.0",
      "runtime of an image, into a registry",
    );
}

/** `push <source> <destination>`: the layout, the registry and --plain-http. */
function pushCommandOptions<T>(y: Argv<T>) {
  return outputOption(y)
    .positional("source", {
      type: "string",
      demandOption: true,
      describe: "<layout>:<tag> (or oci:<layout>:<tag>): build's --out and --tag",
    })
    .positional("destination", { type: "string", demandOption: true, describe: "<registry>/<repository>:<tag>" })
    .option("plain-http", {
      type: "boolean",
      default: false,
      describe: "speak plain HTTP to the registry (a local one); without it, HTTPS only",
    })
    .usage(
      "Usage: $0 push <layout>:<tag> <registry>/<repository>:<tag> [--plain-http] [-o json]\n\n" +
        "Copies the image (an index and every platform's image, or one image) byte for byte over the OCI distribution " +
        "API: the blobs the registry lacks, each platform's manifest, then the tag; the digest is the layout's. " +
        "Credentials: CAPTF_REGISTRY_USERNAME and CAPTF_REGISTRY_PASSWORD when set, else the registry's auths entry in " +
        "$DOCKER_CONFIG/config.json (~/.docker/config.json), as docker login writes it; anonymous without. No Docker " +
        "daemon, no skopeo.\n\n" +
        exitCodeHelp,
    )
    .example("$0 push ./image:v0.1.0 registry.example.com/modules/my-machine:v0.1.0", "over HTTPS")
    .example("$0 push ./image:v0.1.0 127.0.0.1:5000/my-machine:v0.1.0 --plain-http -o json", "a local registry; the digest as JSON");
}

/** `test`: the cluster to run on, the image and role, the lifecycle's inputs and timings. */
function testCommandOptions<T>(y: Argv<T>) {
  return outputOption(y)
    .option("kubeconfig", { type: "string", describe: "the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)" })
    .option("context", { type: "string", describe: "the kubeconfig context (default: its current one)" })
    .option("namespace", { alias: "n", type: "string", demandOption: true, describe: "where the test creates its objects" })
    .option("role", { choices: roles, demandOption: true, describe: "the role the image plays" })
    .option("image", {
      type: "string",
      demandOption: true,
      describe: "the module image, as spec.source.image (e.g. what push printed)",
    })
    .option("cluster", { type: "string", describe: "machine, machinepool: the Cluster to join (its TerraformCluster Ready)" })
    .option("identity", { type: "string", describe: "spec.identityRef.name: required for a cluster; else the cluster's" })
    .option("name", { type: "string", describe: "the name of the objects it creates (default: captf-test-<role>-<time>)" })
    .option("variables", { type: "string", describe: "spec.variables at creation, a JSON object" })
    .option("change-variables", { type: "string", describe: "the input change: a JSON object merged into spec.variables" })
    .option("replicas", { type: "number", default: 1, describe: "machinepool: MachinePool.spec.replicas; the input change adds one" })
    .option("drift-interval", { type: "number", default: 60, describe: "spec.drift.intervalSeconds during the drift check" })
    .option("step-timeout", { type: "number", default: 900, describe: "seconds a step may wait" })
    .option("poll", { type: "number", default: 5, describe: "seconds between reads while waiting" })
    .option("junit", { type: "string", describe: "also write the report as JUnit XML to this file" })
    .usage(
      "Usage: $0 test --namespace <ns> --role <role> --image <ref> [--cluster <name>] [--identity <name>] " +
        "[--junit <file>] [-o json]\n\n" +
        "Creates the role's object (a TerraformCluster and its Cluster; a TerraformMachine and its Machine; a " +
        "TerraformMachinePool and its MachinePool) and takes it through seed 004's lifecycle: the first apply, an " +
        "input change, a drift check, a machine delete (a pool scaled down by one), a state restore " +
        "(captf.io/restore-state), a destroy. After each step it waits until the object is Ready with no Job running " +
        "(or gone, with its state Secrets, backups, durable inputs, leases and Jobs). A machine's inputs are " +
        "immutable: its input change is reported not supported. Each step's outcome, time and the conditions it " +
        "saw go to the report; a failed step names what it waited for and what it saw, and skips the rest but the " +
        "destroy.\n\n" +
        "Exit codes:\n0: every step passed (or was not supported, or skipped)\n1: a step failed\n3: a usage error",
    )
    .example("$0 test -n scratch --role machine --cluster dev --image r.example.com/m:v1 --junit t.xml", "a machine module");
}

async function buildCli(io: CliIo, setExit: (code: number) => void): Promise<Argv> {
  const { default: yargs } = await import("yargs");
  const cwd = io.cwd ?? process.cwd();
  return yargs()
    .scriptName("captf-module")
    .usage(
      "captf-module: start a captf module from an empty directory, build its image without Docker, push it and test its " +
        "lifecycle.\n\nUsage: $0 <command> [options]",
    )
    .command(
      "init [dir]",
      "Write a new module for a role: contract inputs and outputs, versions, tests, a README",
      initCommandOptions,
      async (a) => {
        const { runInit } = await import("./init/init-command.js");
        setExit(
          runInit(io, {
            role: a.role as Role,
            dir: resolve(cwd, a.dir as string),
            runtime: a.runtime as Runtime,
            force: a.force as boolean,
            format: a.output as OutputFormat,
          }),
        );
      },
    )
    .command(
      "build [dir]",
      "Build the module's image per platform into an OCI layout: module, runtime, locked providers, SBOM",
      buildCommandOptions,
      async (a) => {
        const { runBuild } = await import("./build/build-command.js");
        setExit(
          await runBuild(io, {
            dir: a.dir as string,
            role: a.role as Role | undefined,
            runtime: a.runtime as string[],
            runtimeFrom: a["runtime-from"] as string | undefined,
            push: a.push as string | undefined,
            plainHttp: a["plain-http"] as boolean,
            runtimeName: a["runtime-name"] as RuntimeName | undefined,
            runtimeVersion: a["runtime-version"] as string | undefined,
            providers: a.providers as string | undefined,
            out: a.out as string | undefined,
            tag: a.tag as string | undefined,
            name: a.name as string | undefined,
            version: a.version as string | undefined,
            source: a.source as string | undefined,
            revision: a.revision as string | undefined,
            label: a.label as string[],
            format: a.output as OutputFormat,
          }),
        );
      },
    )
    .command(
      "push <source> <destination>",
      "Copy an image of an OCI layout (its index: every platform) to a registry",
      pushCommandOptions,
      async (a) => {
        const { runPush } = await import("./push/push-command.js");
        setExit(
          await runPush(io, {
            source: a.source as string,
            destination: a.destination as string,
            plainHttp: a["plain-http"] as boolean,
            format: a.output as OutputFormat,
          }),
        );
      },
    )
    .command(
      "test",
      "Run seed 004's lifecycle of a module image against a cluster where captf runs, and report each step",
      testCommandOptions,
      async (a) => {
        const { runTest } = await import("./lifecycle/test-command.js");
        setExit(
          await runTest(io, {
            kubeconfig: a.kubeconfig as string | undefined,
            context: a.context as string | undefined,
            namespace: a.namespace as string,
            role: a.role as Role,
            image: a.image as string,
            name: a.name as string | undefined,
            cluster: a.cluster as string | undefined,
            identity: a.identity as string | undefined,
            variables: a.variables as string | undefined,
            changeVariables: a["change-variables"] as string | undefined,
            replicas: a.replicas as number,
            driftInterval: a["drift-interval"] as number,
            stepTimeout: a["step-timeout"] as number,
            poll: a.poll as number,
            junit: a.junit as string | undefined,
            format: a.output as OutputFormat,
          }),
        );
      },
    )
    .demandCommand(1, "name a command: init, build, push or test")
    .epilogue(exitCodeHelp)
    .strict()
    .help()
    .version(false)
    .wrap(Math.min(120, Math.max(80, (io.stdout as { columns?: number }).columns ?? 100)))
    .exitProcess(false)
    .fail((message, error) => {
      throw error ?? new UsageError(message);
    });
}

/** Runs the CLI with `argv` (without node and the script) and returns the exit code; never throws. */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let exitCode: number = exitCodes.ok;
  try {
    const cli = await buildCli(io, (code) => (exitCode = code));
    await cli.parseAsync([...argv], {}, (_error, _parsed, output) => {
      if (output) io.stdout.write(`${output}\n`);
    });
    return exitCode;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`captf-module: ${error.message}\nRun captf-module --help, or captf-module <command> --help, for usage.\n`);
      return exitCodes.usage;
    }
    io.stderr.write(`captf-module: ${error instanceof Error ? error.message : String(error)}\n`);
    if (io.env?.CAPTF_MODULE_DEBUG && error instanceof Error && error.stack && !(error instanceof CommandError))
      io.stderr.write(`${error.stack}\n`);
    return exitCodes.failed;
  }
}

function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), env: process.env };
}
