// The command line: yargs for parsing and --help; every command is a function of (io, options)
// returning the exit code, so tests run the CLI in-process through main().
import { contractVersion, roles, type Role } from "@captf/contract/roles";
import type { Argv } from "yargs";
import type { OutputFormat } from "./commands/emit.js";
import { fastModuleArgs } from "./commands/fast-path.js";
import { exitCodes, UsageError, type CliIo } from "./commands/io.js";
import { runVersion, supportedContracts, toolVersion } from "./commands/version.js";
import { renderContractInputs, runtimes, type Runtime } from "./inputs/contract-inputs.js";

const formats = ["text", "json", "sarif"] as const;

const exitCodeHelp = `Exit codes:
0: no error finding (and no warning with --strict)
1: an error finding, or a warning with --strict
2: the module does not parse, or the image or file cannot be read
3: a usage error: a bad flag, role, contract or reference`;

function commonOptions<T>(y: Argv<T>) {
  return y
    .option("role", { choices: roles, demandOption: true, describe: "the role the module plays: cluster, machine or machinepool" })
    .option("contract", { choices: supportedContracts, default: contractVersion, describe: "the module contract version to check against" })
    .option("strict", { type: "boolean", default: false, describe: "fail (exit 1) on warnings too" })
    .option("allow-warning", {
      type: "string",
      array: true,
      describe: "turn this check's warnings into info, with a note (repeatable, or comma-separated); errors cannot be allowed",
    })
    .option("format", {
      choices: formats,
      default: "text" as OutputFormat,
      describe: "text (grouped by file), json (schema in docs/tfcapi-lint.md) or sarif (2.1.0)",
    })
    .option("json", { type: "boolean", default: false, describe: "same as --format json (the reference's spelling)" });
}

interface CommonArgs {
  role: Role;
  contract: string;
  strict: boolean;
  "allow-warning"?: string[];
  format: OutputFormat;
  json: boolean;
}

/** `--allow-warning a,b --allow-warning c` → [a, b, c]. */
function splitList(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
}

function reportOptions(a: CommonArgs) {
  return {
    role: a.role,
    contract: a.contract,
    strict: a.strict,
    allowWarning: splitList(a["allow-warning"]),
    format: a.json ? ("json" as const) : a.format,
  };
}

/** `module <dir>`: the common options, the directory, its usage and examples. */
function moduleCommandOptions<T>(y: Argv<T>) {
  return commonOptions(y)
    .positional("dir", { type: "string", demandOption: true, describe: "the module directory" })
    .usage(
      "Usage: $0 module <dir> --role <role> [options]\n\n" +
        "Reads every .tf, .tf.json, .tofu and .tofu.json file of <dir> and of the local modules it calls (./ or ../ sources), " +
        "without running terraform or touching the network, and reports each finding with its file, line, column, check ID, " +
        "severity, message and a one-line fix.\n\n" +
        "Suppress one finding with a comment on the line above it, reason required: # tfcapi-lint:ignore <check-id> <reason>\n\n" +
        exitCodeHelp,
    )
    .example("$0 module . --role machine --strict", "lint the module in the current directory as a machine module, failing on warnings")
    .example("$0 module ./pool --role machinepool --format sarif > lint.sarif", "SARIF for code scanning");
}

/** `image <ref>`: the common options, the reference, platform, registry and signature options. */
function imageCommandOptions<T>(y: Argv<T>) {
  return commonOptions(y)
    .positional("ref", {
      type: "string",
      demandOption: true,
      describe: "a registry reference, oci:<dir>[:tag] or oci-archive:<file>[:tag]",
    })
    .option("platform", {
      type: "string",
      describe: "the os/arch[/variant] to check in a multi-platform image (default linux/amd64)",
    })
    .option("all-platforms", { type: "boolean", default: false, describe: "check every platform of a multi-platform image" })
    .option("insecure", {
      type: "boolean",
      default: false,
      describe: "allow plain HTTP to a registry that is not on a loopback address",
    })
    .option("key", {
      type: "string",
      array: true,
      describe:
        "a PEM public key (cosign.pub; ECDSA P-256 or Ed25519) one of which must have signed the image's digest with cosign, " +
        "as a TerraformModulePolicy requires (check image/signature); repeatable",
    })
    .usage(
      "Usage: $0 image <ref> --role <role> [options]\n\n" +
        "Reads the image from a registry (anonymous, or with the credentials of the docker/podman auth files), an OCI " +
        "layout directory (oci:<dir>[:tag]) or an OCI archive (oci-archive:<file>[:tag]), flattens its layers into a " +
        "temporary directory, and runs the image checks and the module checks on /captf/module.\n\n" +
        exitCodeHelp,
    )
    .example("$0 image ghcr.io/example/noop-machine:v1 --role machine", "lint an image in a registry")
    .example("$0 image oci:./build/image:latest --role cluster --all-platforms", "lint every platform of a local OCI layout")
    .example("$0 image ghcr.io/example/noop-machine:v1 --role machine --key cosign.pub", "also require a signature by cosign.pub");
}

/** `validate <file>`: the document, its role and kind. */
function validateCommandOptions<T>(y: Argv<T>) {
  return y
    .positional("file", {
      type: "string",
      demandOption: true,
      describe: "the JSON document, e.g. a tfvars file or `terraform output -json` values",
    })
    .option("role", { choices: roles, demandOption: true, describe: "the role whose schema applies" })
    .option("document", { choices: ["inputs", "outputs"] as const, demandOption: true, describe: "which document the file is" })
    .option("json", { type: "boolean", default: false, describe: "print the result as JSON" })
    .usage(
      "Usage: $0 validate <file> --role <role> --document <inputs|outputs> [--json]\n\n" +
        "Exit codes: 0 valid, 1 invalid, 2 the file cannot be read or is not JSON, 3 a usage error.",
    );
}

/** `schema <dir>`: the module directory, role and contract. */
function schemaCommandOptions<T>(y: Argv<T>) {
  return y
    .positional("dir", { type: "string", demandOption: true, describe: "the module directory" })
    .option("role", { choices: roles, demandOption: true, describe: "the role, whose contract inputs are not user variables" })
    .option("contract", { choices: supportedContracts, default: contractVersion, describe: "the contract version" })
    .usage(
      "Usage: $0 schema <dir> --role <role>\n\n" +
        "Prints one line of compact JSON: an object schema with one property per user variable (neither captf_ nor a " +
        "contract input), required when the variable has no default, closed to other keys.\n\n" +
        "Exit codes: 0 printed, 1 larger than the 32 KiB label limit, 2 the module does not parse, 3 a usage error.",
    );
}

/** `inputs`: the role and the runtime. */
function inputsCommandOptions<T>(y: Argv<T>) {
  return y
    .option("role", { choices: roles, demandOption: true, describe: "the role whose contract inputs to print" })
    .option("runtime", {
      choices: runtimes,
      default: "tofu" as Runtime,
      describe: "the runtime the module targets: tofu (OpenTofu) or terraform",
    })
    .usage(
      "Usage: $0 inputs --role <role> [--runtime tofu|terraform]\n\n" +
        "Prints the variable blocks of the role's contract inputs (type, description, null default, sensitivity and the " +
        "contract's validations) from the role table of @captf/contract, formatted as tofu fmt lays them out. Keep the " +
        "output as a module's inputs file; a module's own limits on an input belong in preconditions.\n\n" +
        "Exit codes: 0 printed, 3 a usage error.",
    )
    .example("$0 inputs --role machinepool > inputs.tf", "write a pool module's contract inputs");
}

async function buildCli(io: CliIo, setExit: (code: number) => void): Promise<Argv> {
  const { default: yargs } = await import("yargs");
  return yargs()
    .scriptName("tfcapi-lint")
    .usage(
      "tfcapi-lint: check a Terraform/OpenTofu module, or a module image, against the captf module contract.\n\nUsage: $0 " +
        "<command> [options]",
    )
    .command(
      "module <dir>",
      "Check a module directory (and every local module it calls) against the role's contract",
      moduleCommandOptions,
      async (a) => {
        const { runModuleCommand } = await import("./commands/module.js");
        setExit(await runModuleCommand(io, { dir: a.dir as string, ...reportOptions(a as unknown as CommonArgs) }));
      },
    )
    .command(
      "image <ref>",
      "Check a built module image: its layout, labels, user, provider mirror and the module inside it",
      imageCommandOptions,
      async (a) => {
        if (a.platform !== undefined && a["all-platforms"]) throw new UsageError("--platform and --all-platforms exclude each other");
        const { runImageCommand } = await import("./commands/image.js");
        setExit(
          await runImageCommand(io, {
            ref: a.ref as string,
            ...reportOptions(a as unknown as CommonArgs),
            platform: a.platform as string | undefined,
            allPlatforms: a["all-platforms"] as boolean,
            insecure: a.insecure as boolean,
            keyFiles: (a.key as string[] | undefined) ?? [],
          }),
        );
      },
    )
    .command(
      "validate <file>",
      "Check an inputs or outputs JSON document against the contract's JSON Schema (for module authors' tests)",
      validateCommandOptions,
      async (a) => {
        const { runValidate } = await import("./commands/validate.js");
        setExit(
          await runValidate(io, {
            file: a.file as string,
            role: a.role as Role,
            document: a.document as "inputs" | "outputs",
            json: a.json as boolean,
          }),
        );
      },
    )
    .command(
      "schema <dir>",
      "Print the JSON Schema of a module's user variables (the io.captf.variables-schema label)",
      schemaCommandOptions,
      async (a) => {
        const { runSchema } = await import("./commands/schema.js");
        setExit(await runSchema(io, a.dir as string, a.role as Role));
      },
    )
    .command(
      "inputs",
      "Print the contract input declarations of a role: the variable blocks every module of the role keeps verbatim",
      inputsCommandOptions,
      (a) => {
        io.stdout.write(renderContractInputs(a.role as Role, a.runtime as Runtime));
        setExit(exitCodes.ok);
      },
    )
    .command(
      "version",
      "Print the version and the contract versions this linter checks against",
      (y) => y.option("json", { type: "boolean", default: false, describe: "print {version, contract: [...]} as JSON" }),
      (a) => setExit(runVersion(io, a.json as boolean)),
    )
    .demandCommand(1, "name a command: module, image, validate, schema, inputs or version")
    .epilogue(exitCodeHelp)
    .strict()
    .version(toolVersion)
    .help()
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
    const fast = fastModuleArgs(argv);
    if (fast) {
      const { runModuleCommand } = await import("./commands/module.js");
      return await runModuleCommand(io, fast);
    }
    const cli = await buildCli(io, (code) => (exitCode = code));
    await cli.parseAsync([...argv], {}, (_error, _parsed, output) => {
      if (output) io.stdout.write(`${output}\n`);
    });
    return exitCode;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`tfcapi-lint: ${error.message}\nRun tfcapi-lint --help, or tfcapi-lint <command> --help, for usage.\n`);
      return exitCodes.usage;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`tfcapi-lint: ${message}\n`);
    if (io.env?.TFCAPI_LINT_DEBUG && error instanceof Error && error.stack) io.stderr.write(`${error.stack}\n`);
    return exitCodes.unreadable;
  }
}

function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), env: process.env };
}
