#!/usr/bin/env node
// The installed command: runs the built CLI with the process's arguments and streams.
import { setFlagsFromString } from "node:v8";

// A one-shot run finishes before TurboFan's compiles pay back: on a 2,000-line module they cost
// more CPU than they save (measured with bench/lint.mjs). Interpreter and baseline code only.
setFlagsFromString("--no-opt");

const { main } = await import("../dist/cli.js");
process.exitCode = await main(process.argv.slice(2));
