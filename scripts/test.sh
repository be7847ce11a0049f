#!/usr/bin/env bash
# The test command: on a machine with only Node 20.19+, npm and Go, install what the tests need
# and run every test of every package. Prints "N passed, N failed" and exits non-zero when a
# test failed or none ran. See README.md "Testing".
set -euo pipefail
cd "$(dirname "$0")/.."

pnpm_version="$(node -p 'require("./package.json").packageManager.split("@")[1]')"
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$pnpm_version" ]; then
  echo "test: installing pnpm $pnpm_version with npm"
  if ! npm install --global --silent "pnpm@$pnpm_version" >/dev/null 2>&1; then
    # No write access to npm's global prefix: install into a user cache instead.
    prefix="${XDG_CACHE_HOME:-$HOME/.cache}/captf/pnpm-$pnpm_version"
    npm install --silent --prefix "$prefix" "pnpm@$pnpm_version" >/dev/null
    export PATH="$prefix/node_modules/.bin:$PATH"
  fi
fi

export TURBO_TELEMETRY_DISABLED=1
pnpm install --frozen-lockfile --reporter=silent

exec node scripts/test.mjs "$@"
