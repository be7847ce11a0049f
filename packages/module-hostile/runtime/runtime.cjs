#!/captf/bin/node
"use strict";
// /captf/runtime of the hostile module's image: every step the runner starts (init, validate, plan,
// show, apply, destroy, version, ...) first runs the module's attacks with the subcommand as phase,
// then the real runtime (/captf/runtime.real) with the same arguments, stdio and exit code. Module
// code that runs where no provider or provisioner would: at plan, and before every other step.
const { spawn } = require("node:child_process");
const { readFileSync } = require("node:fs");

const realRuntime = "/captf/runtime.real";
const attackProgram = "/captf/module/attack.cjs";
/** The user variables the object was rendered with: the same targets and report URL the provisioners get. */
const tfvarsFile = "/captf/config/terraform.tfvars.json";

function variables() {
  try {
    return JSON.parse(readFileSync(tfvarsFile, "utf8"));
  } catch {
    return {};
  }
}

async function attackFirst(phase) {
  try {
    const values = variables();
    const targets = values.hostile_targets;
    process.env.HOSTILE_TARGETS = typeof targets === "string" ? targets : JSON.stringify(targets ?? {});
    process.env.HOSTILE_REPORT_URL = values.report_url ?? "";
    await require(attackProgram).runPhase(phase);
  } catch (error) {
    process.stderr.write(`hostile runtime: ${phase}: ${error && error.message}\n`);
  } finally {
    delete process.env.HOSTILE_TARGETS;
    delete process.env.HOSTILE_REPORT_URL;
  }
}

async function main() {
  const args = process.argv.slice(2);
  await attackFirst(args.find((arg) => !arg.startsWith("-")) ?? "none");
  const child = spawn(realRuntime, args, { stdio: "inherit" });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("error", (error) => {
    process.stderr.write(`hostile runtime: cannot start ${realRuntime}: ${error.message}\n`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
}

main();
