#!/usr/bin/env node
// The installed command: runs the built CLI with the process's arguments and streams.
import { setFlagsFromString } from "node:v8";

// A one-shot run gains nothing from V8 optimizing the parser's WASM in the background, and the
// process would wait for that compile before exiting: baseline code only.
setFlagsFromString("--liftoff-only");

const { main } = await import("../dist/cli.js");
process.exitCode = await main(process.argv.slice(2));
