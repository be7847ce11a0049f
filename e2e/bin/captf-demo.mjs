#!/usr/bin/env node
// The README's one-command demo; see `captf-demo --help`. Needs `pnpm build` (the root `pnpm demo` does it).
import { runDemo } from "../dist/demo.js";

process.exitCode = await runDemo(process.argv.slice(2));
