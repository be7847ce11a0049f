#!/usr/bin/env bash
# tools/install.sh - build the pinned external programs (etcd, OpenTofu, Terraform, kube-apiserver,
# kube-controller-manager, Cluster API, promtool, cosign, a minimal OpenTelemetry Collector) from the Go module proxy
# into a cache outside the repo.
#
# Usage: tools/install.sh [--only NAME]... [--list] [--print-env] [--help]
#
#   (no option)    build every tool that is not cached yet, both runtimes for the other architecture included
#                  (the release's tests build and run every module image's arm64 platform), then write $CAPTF_TOOLS_DIR/env
#   --only NAME    restrict to one tool (etcd, tofu, terraform, kube, capi, promtool, cosign, otelcol, prometheus-crds, tofu-arm64,
#                  terraform-arm64: the other architecture's runtimes for module images); may be repeated
#   --list         print name, version, binary path and cached/missing; builds nothing
#   --print-env    print the export lines of the env file to stdout; builds nothing
#
# Cache: $CAPTF_TOOLS_DIR (default $HOME/.cache/captf/tools)/<name>-<version>/bin/<binary>.
# Versions: read from the require line of tools/<name>/go.mod (the one source of truth).
# Debian programs the tests take from PATH (umoci, skopeo, docker-registry, patchelf,
# qemu-user-static, chromium for the book test) are not built here: scripts/test.sh installs them
# with apt-get as root; --list shows whether each is found.
# Progress messages go to stderr, so `eval "$(tools/install.sh --print-env)"` stays clean.
set -euo pipefail
shopt -s inherit_errexit

TOOLS_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CAPTF_TOOLS_DIR="${CAPTF_TOOLS_DIR:-$HOME/.cache/captf/tools}"

# name | main module (whose require line gives the version) | binary=package ...
TOOLS=(etcd tofu terraform kube capi promtool cosign otelcol)
declare -A TOOL_MODULE=(
  [etcd]=go.etcd.io/etcd/server/v3
  [tofu]=github.com/opentofu/opentofu
  [terraform]=github.com/hashicorp/terraform
  [kube]=k8s.io/kubernetes
  [capi]=sigs.k8s.io/cluster-api
  [promtool]=github.com/prometheus/prometheus
  [cosign]=github.com/sigstore/cosign/v2
  [otelcol]=go.opentelemetry.io/collector/otelcol
)
declare -A TOOL_BINS=(
  [etcd]="etcd=go.etcd.io/etcd/server/v3"
  [tofu]="tofu=github.com/opentofu/opentofu/cmd/tofu"
  [terraform]="terraform=github.com/hashicorp/terraform"
  [kube]="kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager"
  [capi]="capi-manager=sigs.k8s.io/cluster-api/core clusterctl=sigs.k8s.io/cluster-api/cmd/clusterctl"
  [promtool]="promtool=github.com/prometheus/prometheus/cmd/promtool"
  [cosign]="cosign=github.com/sigstore/cosign/v2/cmd/cosign"
  [otelcol]="otelcol=captf.local/tools/otelcol"  # tools/otelcol/main.go: the OTLP receiver and the file exporter
)

# Go build tags per tool. promtool without Prometheus' service discovery plugins (the cloud SDKs): the tests run only
# `check rules` and `test rules`, and the build costs a third of the CPU (267 s against 839 s from an empty build cache).
declare -A TOOL_TAGS=([promtool]=remove_all_sd)

# Data, not programs: files copied out of a module (no build), named like binaries.
declare -A TOOL_FILES=()
TOOLS+=(prometheus-crds)
TOOL_MODULE[prometheus-crds]=github.com/prometheus-operator/prometheus-operator
TOOL_BINS[prometheus-crds]="prometheusrule-crd=example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml servicemonitor-crd=example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
TOOL_FILES[prometheus-crds]=1

# The module images' runtimes are built for the other architecture too (an OCI index of linux/amd64
# and linux/arm64): tofu-arm64 and terraform-arm64 on an amd64 machine, cross-compiled from the same go.mod.
declare -A TOOL_SOURCE=() TOOL_GOARCH=()
case $(uname -m) in aarch64|arm64) OTHER_ARCH=amd64 ;; *) OTHER_ARCH=arm64 ;; esac
for base in tofu terraform; do
  TOOLS+=("$base-$OTHER_ARCH")
  TOOL_MODULE[$base-$OTHER_ARCH]=${TOOL_MODULE[$base]}
  TOOL_BINS[$base-$OTHER_ARCH]=${TOOL_BINS[$base]}
  TOOL_SOURCE[$base-$OTHER_ARCH]=$base
  TOOL_GOARCH[$base-$OTHER_ARCH]=$OTHER_ARCH
done
tool_source() { printf '%s\n' "${TOOL_SOURCE[$1]:-$1}"; }

# Never download another Go toolchain; never pick up a go.work from a parent directory.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0

log() { printf 'tools: %s\n' "$*" >&2; }
die() { printf 'tools: error: %s\n' "$*" >&2; exit 1; }

# Version of a tool = the version its go.mod requires the main module at.
tool_version() {
  local name=$1 mod=${TOOL_MODULE[$1]} gomod="$TOOLS_SRC/$(tool_source "$1")/go.mod" v
  [[ -f $gomod ]] || die "$gomod not found"
  v=$(awk -v m="$mod" '
    $1 == "require" && $2 == m { print $3; exit }
    $1 == m && $2 ~ /^v[0-9]/   { print $2; exit }' "$gomod")
  [[ -n $v ]] || die "no 'require $mod vX.Y.Z' line in $gomod"
  printf '%s\n' "$v"
}

tool_dir() { printf '%s/%s-%s\n' "$CAPTF_TOOLS_DIR" "$1" "$2"; }

# Extra -ldflags per tool (version stamping as the upstream release builds do).
tool_ldflags() {
  local name=$1 version=$2
  case $(tool_source "$name") in
    tofu) printf '%s' "-X github.com/opentofu/opentofu/version.dev=no" ;;
    kube)
      local core=${version#v} major minor f=""
      major=${core%%.*}; minor=${core#*.}; minor=${minor%%.*}
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        f+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
      done
      printf '%s' "${f# }" ;;
    capi) printf '%s' "-X sigs.k8s.io/cluster-api/version.gitVersion=$version -X sigs.k8s.io/cluster-api/version.gitTreeState=clean" ;;
    promtool) printf '%s' "-X github.com/prometheus/common/version.Version=${version#v}" ;;
    cosign) printf '%s' "-X sigs.k8s.io/release-utils/version.gitVersion=$version -X sigs.k8s.io/release-utils/version.gitTreeState=clean" ;;
    *) ;;
  esac
}

env_var_for() { local b=${1^^}; printf 'CAPTF_%s\n' "${b//-/_}"; }
# The variable of a binary of tool $1: CAPTF_TOFU, or CAPTF_TOFU_ARM64 for a cross-compiled one.
tool_env_var() { env_var_for "$2${TOOL_GOARCH[$1]:+-${TOOL_GOARCH[$1]}}"; }

is_cached() {
  local dir bin pair
  dir=$(tool_dir "$1" "$2")
  for pair in ${TOOL_BINS[$1]}; do
    bin=${pair%%=*}
    [[ -f $dir/bin/$bin && ( -x $dir/bin/$bin || -n ${TOOL_FILES[$1]:-} ) ]] || return 1
  done
}

mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

TMP_BUILD=""
cleanup() { [[ -n $TMP_BUILD && -d $TMP_BUILD ]] && rm -rf "$TMP_BUILD"; return 0; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

run_or_die() { # run_or_die <what> <cmd...>: run quietly; on failure show the command and the end of its output
  local what=$1; shift
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if (( rc != 0 )); then
    printf '%s\n' "$out" | tail -n 40 >&2
    die "$what failed (exit $rc)
  command: (cd $PWD && GOTOOLCHAIN=$GOTOOLCHAIN CGO_ENABLED=$CGO_ENABLED $(printf '%q ' "$@" | sed 's/ $//'))"
  fi
}

# copy_files <name> <version>: a data tool's files, from the module's zip (only that module is downloaded).
copy_files() {
  local name=$1 version=$2 mod=${TOOL_MODULE[$1]} final tmp pair src
  final=$(tool_dir "$name" "$version")
  log "fetching $name ($mod@$version) ..."
  cd "$TOOLS_SRC/$(tool_source "$name")"
  run_or_die "downloading $mod@$version from GOPROXY=$(go env GOPROXY)" go mod download "$mod@$version"
  src=$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$CAPTF_TOOLS_DIR"
  TMP_BUILD=$(mktemp -d "$CAPTF_TOOLS_DIR/.tmp-$name-$version.XXXXXX")
  tmp=$TMP_BUILD
  chmod 755 "$tmp"
  mkdir -p "$tmp/bin"
  for pair in ${TOOL_BINS[$name]}; do
    install -m 644 "$src/${pair#*=}" "$tmp/bin/${pair%%=*}"
  done
  printf 'name=%s\nversion=%s\nmodule=%s\n' "$name" "$version" "$mod" >"$tmp/BUILDINFO"
  [[ -e $final ]] && rm -rf "$final"
  mv -T "$tmp" "$final"
  TMP_BUILD=""
  cd - >/dev/null
  log "fetched $name $version"
}

build_tool() {
  local name=$1 version=$2 mod=${TOOL_MODULE[$1]} final tmp start pair bin pkg ldflags bytes=0 secs
  command -v go >/dev/null 2>&1 ||
    die "'go' not found in PATH; it is needed to build $name ($mod@$version) - install Go >= the 'go' line of tools/$name/go.mod"
  final=$(tool_dir "$name" "$version")
  log "building $name $version ..."
  start=$SECONDS
  cd "$TOOLS_SRC/$(tool_source "$name")"

  # Fetch every module first, so a proxy that cannot serve one fails here with its name.
  run_or_die "downloading the modules of $name ($mod@$version) from GOPROXY=$(go env GOPROXY)" \
    go mod download
  local pkgs=()
  for pair in ${TOOL_BINS[$name]}; do pkgs+=("${pair#*=}"); done
  run_or_die "verifying the module graph of $name ($mod@$version)" \
    go list ${TOOL_TAGS[$name]:+-tags "${TOOL_TAGS[$name]}"} -deps -f '' "${pkgs[@]}"

  mkdir -p "$CAPTF_TOOLS_DIR"
  TMP_BUILD=$(mktemp -d "$CAPTF_TOOLS_DIR/.tmp-$name-$version.XXXXXX")
  tmp=$TMP_BUILD
  chmod 755 "$tmp"
  mkdir -p "$tmp/bin"
  ldflags="-s -w $(tool_ldflags "$name" "$version")"
  ldflags=${ldflags% }
  for pair in ${TOOL_BINS[$name]}; do
    bin=${pair%%=*} pkg=${pair#*=}
    run_or_die "building $bin for $name ($mod@$version)" \
      env ${TOOL_GOARCH[$name]:+GOARCH=${TOOL_GOARCH[$name]}} go build ${TOOL_TAGS[$name]:+-tags "${TOOL_TAGS[$name]}"} -trimpath -ldflags "$ldflags" -o "$tmp/bin/$bin" "$pkg"
    bytes=$(( bytes + $(stat -c %s "$tmp/bin/$bin") ))
  done
  secs=$(( SECONDS - start ))
  {
    printf 'name=%s\nversion=%s\nmodule=%s\ngoarch=%s\n' "$name" "$version" "$mod" "${TOOL_GOARCH[$name]:-$(go env GOARCH)}"
    printf 'go=%s\nbuilt=%s\nbuild_seconds=%s\nldflags=%s\ntags=%s\n' "$(go env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$secs" "$ldflags" \
      "${TOOL_TAGS[$name]:-}"
    printf 'go.sum-sha256=%s\n' "$(sha256sum go.sum | cut -d' ' -f1)"
  } >"$tmp/BUILDINFO"

  # Atomic publish: the final directory either does not exist or is complete.
  [[ -e $final ]] && rm -rf "$final"   # an incomplete leftover (is_cached said no)
  mv -T "$tmp" "$final"
  TMP_BUILD=""
  cd - >/dev/null
  log "built $name $version in ${secs}s ($(mb "$bytes") MB)"
}

env_lines() {
  local name version dir pair bin
  printf '# generated by tools/install.sh - source it: . %q\n' "$CAPTF_TOOLS_DIR/env"
  printf 'export CAPTF_TOOLS_DIR=%q\n' "$CAPTF_TOOLS_DIR"
  for name in "${TOOLS[@]}"; do
    version=$(tool_version "$name")
    dir=$(tool_dir "$name" "$version")
    for pair in ${TOOL_BINS[$name]}; do
      bin=${pair%%=*}
      if [[ -x $dir/bin/$bin || ( -n ${TOOL_FILES[$name]:-} && -f $dir/bin/$bin ) ]]; then
        printf 'export %s=%q\n' "$(tool_env_var "$name" "$bin")" "$dir/bin/$bin"
      else
        printf '# %s: %s %s not built (tools/install.sh --only %s)\n' "$(tool_env_var "$name" "$bin")" "$name" "$version" "$name"
      fi
    done
  done
}

write_env() {
  local f="$CAPTF_TOOLS_DIR/env" content tmp
  content=$(env_lines)
  mkdir -p "$CAPTF_TOOLS_DIR"
  tmp=$(mktemp "$CAPTF_TOOLS_DIR/.env.XXXXXX")
  printf '%s\n' "$content" >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$f"
  log "env written to $f"
}

# Debian programs on PATH → their package (as packages/testkit's debianTools).
declare -A DEBIAN_PROGRAMS=(
  [umoci]=umoci [skopeo]=skopeo [docker-registry]=docker-registry [go]=golang [patchelf]=patchelf
  [qemu-aarch64-static]=qemu-user-static [chromium]=chromium
)

list_tools() {
  local name version dir pair bin status
  printf '%-9s %-10s %-10s %s\n' NAME VERSION STATUS PATH
  for name in "${SELECTED[@]}"; do
    version=$(tool_version "$name")
    dir=$(tool_dir "$name" "$version")
    for pair in ${TOOL_BINS[$name]}; do
      bin=${pair%%=*}
      if [[ -x $dir/bin/$bin || ( -n ${TOOL_FILES[$name]:-} && -f $dir/bin/$bin ) ]]; then status=cached; else status=missing; fi
      printf '%-9s %-10s %-10s %s\n' "$name" "$version" "$status" "$dir/bin/$bin"
    done
  done
  for bin in $(printf '%s\n' "${!DEBIAN_PROGRAMS[@]}" | sort); do
    if command -v "$bin" >/dev/null 2>&1; then
      printf '%-9s %-10s %-10s %s\n' "$bin" debian found "$(command -v "$bin")"
    else
      printf '%-9s %-10s %-10s %s\n' "$bin" debian missing "apt-get install -y ${DEBIAN_PROGRAMS[$bin]}"
    fi
  done
}

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }

SELECTED=() MODE=build
while (( $# )); do
  case $1 in
    --only) [[ $# -ge 2 ]] || die "--only needs a tool name (${TOOLS[*]})"
            [[ -n ${TOOL_MODULE[$2]:-} ]] || die "unknown tool '$2' (known: ${TOOLS[*]})"
            SELECTED+=("$2"); shift 2 ;;
    --only=*) n=${1#--only=}; [[ -n ${TOOL_MODULE[$n]:-} ]] || die "unknown tool '$n' (known: ${TOOLS[*]})"
            SELECTED+=("$n"); shift ;;
    --list) MODE=list; shift ;;
    --print-env) MODE=print-env; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
# By default all: the release suite's Terraform images need terraform for the other architecture too.
(( ${#SELECTED[@]} )) || SELECTED=("${TOOLS[@]}")

case $MODE in
  list) list_tools; exit 0 ;;
  print-env) env_lines; exit 0 ;;
esac

mkdir -p "$CAPTF_TOOLS_DIR"
# One installer at a time per cache; then leftovers of killed runs can be removed safely.
exec 9>"$CAPTF_TOOLS_DIR/.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "waiting for another tools/install.sh holding $CAPTF_TOOLS_DIR/.lock ..."; flock 9; }
fi
rm -rf "$CAPTF_TOOLS_DIR"/.tmp-* "$CAPTF_TOOLS_DIR"/.env.* 2>/dev/null || true

for name in "${SELECTED[@]}"; do
  version=$(tool_version "$name")
  if is_cached "$name" "$version"; then
    log "$name $version cached"
  else
    if [[ -n ${TOOL_FILES[$name]:-} ]]; then copy_files "$name" "$version"; else build_tool "$name" "$version"; fi
  fi
done
write_env
