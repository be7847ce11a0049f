#!/usr/bin/env bash
# The test command: on a machine with only Node 20.19+, npm and Go, install what the tests need
# (scripts/test.mjs fetches the pinned Node LTS the controller and runner suites run under)
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

# Debian programs the tests use: command (or, for libraries, absolute path) → package.
# The image is built for arm64 too: its libraries come from the *-arm64-cross packages, and
# qemu-user-static runs its node.
declare -A debian_packages=(
  [openssl]=openssl [patchelf]=patchelf [chroot]=coreutils [mknod]=coreutils
  [umoci]=umoci [skopeo]=skopeo [docker-registry]=docker-registry
  [unshare]=util-linux [mount]=mount [hostname]=hostname
  [qemu-aarch64-static]=qemu-user-static [chromium]=chromium
  [/usr/aarch64-linux-gnu/lib/libc.so.6]=libc6-arm64-cross
  [/usr/aarch64-linux-gnu/lib/libstdc++.so.6]=libstdc++6-arm64-cross
  [/usr/aarch64-linux-gnu/lib/libgcc_s.so.1]=libgcc-s1-arm64-cross
)
missing=()
for command in "${!debian_packages[@]}"; do
  [ -e "$command" ] || command -v "$command" >/dev/null 2>&1 || missing+=("${debian_packages[$command]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  echo "test: installing Debian packages: $packages"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null
  elif [ "${CAPTF_ALLOW_MISSING_TOOLS:-}" != 1 ]; then
    echo "test: cannot install $packages (needs root and apt-get); install them, or set CAPTF_ALLOW_MISSING_TOOLS=1" >&2
    exit 1
  fi
fi

# OpenTofu, etcd, kube-apiserver and kube-controller-manager, built once into ~/.cache/captf/tools.
if ! tools/install.sh; then
  if [ "${CAPTF_ALLOW_MISSING_TOOLS:-}" != 1 ]; then
    echo "test: tools/install.sh failed; see above, or set CAPTF_ALLOW_MISSING_TOOLS=1 to run without those tools" >&2
    exit 1
  fi
  echo "test: tools/install.sh failed; continuing because CAPTF_ALLOW_MISSING_TOOLS=1"
fi

exec node scripts/test.mjs "$@"
