// The broker as a program: `node broker.cjs <flags>` in a Job's sidecar. It carries the broker's
// code alone, not the runner's: it starts sooner and holds less memory beside the module's container.
// Anything but a Job's well-formed flags is a usage error; `runner broker --help` documents them.
import { standardStreamWriter } from "../output.js";
import { parseFast } from "../flags.js";
import { BrokerUsageError, brokerExitCodes, brokerFlags, runBroker } from "./command.js";

const stderr = standardStreamWriter({ fd: 2, stream: () => process.stderr });

async function main(): Promise<number> {
  const args = parseFast(brokerFlags, process.argv.slice(2));
  if (!args) {
    stderr(`broker: bad or missing flags (${process.argv.slice(2).join(" ")}); see "runner broker --help"\n`);
    return brokerExitCodes.usage;
  }
  const stop = new AbortController();
  process.once("SIGTERM", () => stop.abort());
  process.once("SIGINT", () => stop.abort());
  try {
    return await runBroker(args, { stderr, env: process.env, signal: stop.signal });
  } catch (error) {
    stderr(`broker: ${(error as Error).message}\n`);
    return error instanceof BrokerUsageError ? brokerExitCodes.usage : brokerExitCodes.failure;
  }
}

void main().then((code) => process.exit(code));
