#!/usr/bin/env node
// The runner from a checkout, through the compiled dist/ (run `npx tsc -b` first). Jobs run the bundle instead.
import "../dist/entry.js";
