// The command line (`kubectl captf …`): yargs for parsing and --help; main() runs in-process so
// tests drive the same code the binary runs, with buffers for streams and an env of their own.
import type { Argv } from "yargs";
import { approvePlan, describeCluster, requestRestore, showLogs, showPlan, type OutputFormat } from "./commands.js";
import { apiMessage, connect, type Connection, type ConnectionOptions } from "./kube.js";
import { parseObjectReference, Refusal, UsageError } from "./objects.js";

export interface CliIo {
  readonly stdout: { write(text: string): unknown; readonly columns?: number };
  readonly stderr: { write(text: string): unknown };
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export const exitCodes = {
  ok: 0,
  /** The request was refused (a changed plan, a missing backup, an object not found) or the API server failed it. */
  failed: 1,
  /** Bad arguments or flags, no kubeconfig. */
  usage: 2,
} as const;

const formats = ["text", "json"] as const;

interface GlobalArgs {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  output: OutputFormat;
}

const epilogue =
  `Connection: like kubectl, the kubeconfig is --kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context ` +
  `picks a context and -n a namespace (else the context's, else default).
Exit codes: 0 done; 1 refused (the plan changed, no such backup, not found) or failed by the API server; 2 a usage error.
Documentation: docs/kubectl-captf.md.`;

async function buildCli(
  io: CliIo,
  run: (action: (connection: Connection, format: OutputFormat) => Promise<void>, args: GlobalArgs) => Promise<void>,
): Promise<Argv> {
  const { default: yargs } = await import("yargs");
  const out = io.stdout;
  const reference = <T>(y: Argv<T>) =>
    y.positional("object", { type: "string", demandOption: true, describe: "the object as <kind>/<name>, e.g. terraformcluster/demo" });
  return yargs()
    .scriptName("kubectl captf")
    .usage(
      "kubectl captf: look at and act on captf's Terraform objects (TerraformCluster, TerraformMachine, " +
        "TerraformMachinePool).\n\nUsage: $0 <command> [options]",
    )
    .option("kubeconfig", { type: "string", describe: "path of the kubeconfig file" })
    .option("context", { type: "string", describe: "the kubeconfig context to use" })
    .option("namespace", { alias: "n", type: "string", describe: "the namespace of the objects" })
    .option("output", { alias: "o", choices: formats, default: "text" as OutputFormat, describe: "text for people, json for programs" })
    .command(
      "describe cluster <name>",
      "Show the tree of a cluster's Terraform objects: each one's conditions (Ready first), running Jobs and last run",
      (y) =>
        y
          .positional("name", {
            type: "string",
            demandOption: true,
            describe: "the Cluster API cluster's name (the cluster.x-k8s.io/cluster-name label), or the TerraformCluster's",
          })
          .example("$0 describe cluster demo -n team-a", "the TerraformCluster, its identity, machine pools and machines of cluster demo"),
      (a) => run((connection, format) => describeCluster(connection, a.name as string, format, out), a as unknown as GlobalArgs),
    )
    .command("plan", "Show or approve the plan a TerraformCluster with applyPolicy Manual waits on", (y) =>
      y
        .command(
          "show <object>",
          "Show the pending plan (status.plan): its hash, counts and resource entries; with --diff, what it changes",
          (z) =>
            reference(z)
              .option("diff", {
                type: "boolean",
                default: false,
                describe:
                  "print the plan's changes attribute by attribute, as tofu show does (sensitive values and values known only " +
                  "after apply masked), from the diff its Job kept in the object's plan diff Secret (get on that Secret needed); " +
                  "with no plan pending, the plan the last apply was blocked before (DestructivePlanBlocked), of any kind",
              })
              .example("$0 plan show terraformcluster/demo", "the plan waiting for approval, and the command that approves it")
              .example("$0 plan show terraformcluster/demo --diff", "what that plan changes, as tofu show prints it; -o json for the data"),
          (a) => {
            const object = parseObjectReference(a.object as string);
            return run(
              (connection, format) => showPlan(connection, object, a.object as string, format, out, a.diff as boolean),
              a as unknown as GlobalArgs,
            );
          },
        )
        .command(
          "approve <object>",
          "Approve exactly the plan shown: sets captf.io/approve-plan to its hash, refusing when the plan changed; records the approver",
          (z) =>
            reference(z)
              .option("hash", {
                type: "string",
                describe:
                  "the planHash plan show printed; refused when status.plan holds another (without it: the plan pending now, " +
                  "read and written with one resourceVersion)",
              })
              .example("$0 plan approve terraformcluster/demo --hash p1:…", "approve the plan plan show printed, and only that one"),
          (a) => {
            const object = parseObjectReference(a.object as string);
            return run(
              (connection, format) => approvePlan(connection, object, a.hash as string | undefined, format, out),
              a as unknown as GlobalArgs,
            );
          },
        )
        .demandCommand(1, "name a plan command: show or approve"),
    )
    .command(
      "restore <object>",
      "Restore a state backup: sets captf.io/restore-state to a serial listed in status.stateBackups",
      (y) =>
        reference(y)
          .option("serial", { type: "number", demandOption: true, describe: "the backup's state serial (status.stateBackups[].serial)" })
          .example("$0 restore terraformmachinepool/pool-a --serial 7", "run a restore Job that pushes backup 7"),
      (a) => {
        const object = parseObjectReference(a.object as string);
        return run((connection, format) => requestRestore(connection, object, a.serial as number, format, out), a as unknown as GlobalArgs);
      },
    )
    .command(
      "logs <object>",
      "Print the runner log of the object's newest Job (its pod's log, through the API server)",
      (y) => reference(y).example("$0 logs terraformcluster/demo", "the log of the cluster's last Job"),
      (a) => {
        const object = parseObjectReference(a.object as string);
        return run((connection, format) => showLogs(connection, object, format, out), a as unknown as GlobalArgs);
      },
    )
    .demandCommand(1, "name a command: describe, plan, restore or logs")
    .epilogue(epilogue)
    .strict()
    .help()
    .version(false)
    .wrap(Math.min(120, Math.max(80, io.stdout.columns ?? 100)))
    .exitProcess(false)
    .fail((message, error) => {
      throw error ?? new UsageError(message);
    });
}

/** Runs the CLI with `argv` (without node and the script) and returns the exit code; never throws. */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const env = io.env ?? {};
  try {
    let action: Promise<void> | undefined;
    const cli = await buildCli(io, (command, args) => {
      const options: ConnectionOptions = {
        ...(args.kubeconfig ? { kubeconfig: args.kubeconfig } : {}),
        ...(args.context ? { context: args.context } : {}),
        ...(args.namespace ? { namespace: args.namespace } : {}),
      };
      action = command(connect(options, env), args.output);
      return action;
    });
    await cli.parseAsync([...argv], {}, (_error, _parsed, output) => {
      if (output) io.stdout.write(`${output}\n`);
    });
    await action;
    return exitCodes.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`kubectl captf: ${error.message}\nRun kubectl captf --help, or kubectl captf <command> --help, for usage.\n`);
      return exitCodes.usage;
    }
    io.stderr.write(`kubectl captf: ${error instanceof Refusal ? error.message : apiMessage(error)}\n`);
    return exitCodes.failed;
  }
}

function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}
