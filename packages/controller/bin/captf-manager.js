#!/usr/bin/env node
// The manager from a checkout or the npm package, through the compiled dist/ (run `npx tsc -b` first).
// The image runs the same entry bundled: scripts/build-manager-bundle.mjs.
import { runManagerProcess } from "../dist/manager-main.js";

await runManagerProcess();
