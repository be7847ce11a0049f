#!/usr/bin/env bash
# tools/smoke.sh - check that the binaries built by tools/install.sh work together:
# etcd -> kube-apiserver -> kube-controller-manager on loopback, plus `tofu version`.
# Everything runs on 127.0.0.1 in a temp dir and is stopped on exit.
#
# Usage: tools/smoke.sh            (reads $CAPTF_TOOLS_DIR/env; run tools/install.sh first)
#        KEEP=1 tools/smoke.sh     keep the temp dir (logs, certs) for inspection
set -euo pipefail
shopt -s inherit_errexit

CAPTF_TOOLS_DIR="${CAPTF_TOOLS_DIR:-$HOME/.cache/captf/tools}"
# shellcheck disable=SC1091
[[ -f $CAPTF_TOOLS_DIR/env ]] && . "$CAPTF_TOOLS_DIR/env"
for v in CAPTF_TOFU CAPTF_ETCD CAPTF_KUBE_APISERVER CAPTF_KUBE_CONTROLLER_MANAGER; do
  [[ -n ${!v:-} && -x ${!v} ]] || { echo "smoke: $v is not set or not executable; run tools/install.sh" >&2; exit 1; }
done
command -v openssl >/dev/null || { echo "smoke: openssl is needed" >&2; exit 1; }
command -v curl >/dev/null || { echo "smoke: curl is needed" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/captf-smoke.XXXXXX")
PIDS=() NAMES=()
stop() { # stop <pid>: SIGTERM, up to 20 s for a graceful exit, then SIGKILL
  local pid=$1 i
  kill "$pid" 2>/dev/null || return 0
  for (( i = 0; i < 100; i++ )); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() { # newest first: controller-manager, apiserver, then etcd (an apiserver whose etcd is gone hangs on SIGTERM)
  local i t
  for (( i = ${#PIDS[@]} - 1; i >= 0; i-- )); do
    t=$(now_ms); stop "${PIDS[i]}"
    echo "smoke: stopped ${NAMES[i]} in $(secs_since "$t")s"
  done
  if [[ -n ${KEEP:-} ]]; then echo "smoke: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
free_port() { # a random loopback port nothing listens on
  local p
  while :; do
    p=$(( 20000 + RANDOM % 40000 ))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
wait_for() { # wait_for <what> <seconds> <pid> <cmd...>
  local what=$1 limit=$2 pid=$3; shift 3
  local start; start=$(now_ms)
  while ! "$@" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "smoke: $what exited; log:" >&2; tail -n 30 "$T/$what.log" >&2; exit 1; }
    (( $(now_ms) - start < limit * 1000 )) || { echo "smoke: $what not ready after ${limit}s; log:" >&2; tail -n 30 "$T/$what.log" >&2; exit 1; }
    sleep 0.2
  done
}
secs_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }

: >"$T/tofurc"   # this machine may point TF_CLI_CONFIG_FILE at a missing file; tofu then warns
echo "smoke: $(TF_CLI_CONFIG_FILE="$T/tofurc" "$CAPTF_TOFU" version | sed -n 1p)"

# --- etcd -------------------------------------------------------------------------------------
EP=$(free_port) PP=$(free_port)
t0=$(now_ms)
"$CAPTF_ETCD" --name=smoke --data-dir="$T/etcd" \
  --listen-client-urls="http://127.0.0.1:$EP" --advertise-client-urls="http://127.0.0.1:$EP" \
  --listen-peer-urls="http://127.0.0.1:$PP" --initial-advertise-peer-urls="http://127.0.0.1:$PP" \
  --initial-cluster="smoke=http://127.0.0.1:$PP" \
  --unsafe-no-fsync=true --log-level=warn >"$T/etcd.log" 2>&1 &
PIDS+=($!) NAMES+=(etcd)
wait_for etcd 30 "${PIDS[-1]}" curl -fsS "http://127.0.0.1:$EP/health"
echo "smoke: etcd ready on 127.0.0.1:$EP in $(secs_since "$t0")s"

# --- kube-apiserver ---------------------------------------------------------------------------
mkdir -p "$T/certs"
openssl genrsa -out "$T/certs/sa.key" 2048 2>/dev/null
openssl rsa -in "$T/certs/sa.key" -pubout -out "$T/certs/sa.pub" 2>/dev/null
TOKEN=captf-smoke-token
printf '%s,admin,admin-uid,"system:masters"\n' "$TOKEN" >"$T/tokens.csv"
AP=$(free_port)
t0=$(now_ms)
"$CAPTF_KUBE_APISERVER" \
  --etcd-servers="http://127.0.0.1:$EP" \
  --cert-dir="$T/certs" \
  --secure-port="$AP" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
  --token-auth-file="$T/tokens.csv" \
  --authorization-mode=RBAC \
  --service-cluster-ip-range=10.0.0.0/24 \
  --allow-privileged=true \
  --disable-admission-plugins=ServiceAccount \
  --service-account-issuer="https://127.0.0.1:$AP/" \
  --service-account-key-file="$T/certs/sa.pub" \
  --service-account-signing-key-file="$T/certs/sa.key" \
  >"$T/kube-apiserver.log" 2>&1 &
PIDS+=($!) NAMES+=(kube-apiserver)
api() { curl -fsS -k -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$AP$1"; }
wait_for kube-apiserver 120 "${PIDS[-1]}" api /readyz
echo "smoke: kube-apiserver /readyz=$(api /readyz) on 127.0.0.1:$AP in $(secs_since "$t0")s ($(api /version | awk -F'"' '/gitVersion/ { print $4 }'))"

# --- kube-controller-manager ------------------------------------------------------------------
cat >"$T/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: smoke
  cluster:
    server: https://127.0.0.1:$AP
    certificate-authority: $T/certs/apiserver.crt
users:
- name: admin
  user:
    token: $TOKEN
contexts:
- name: smoke
  context: {cluster: smoke, user: admin}
current-context: smoke
EOF
CP=$(free_port)
t0=$(now_ms)
"$CAPTF_KUBE_CONTROLLER_MANAGER" \
  --kubeconfig="$T/kubeconfig" \
  --authentication-kubeconfig="$T/kubeconfig" --authorization-kubeconfig="$T/kubeconfig" \
  --secure-port="$CP" --bind-address=127.0.0.1 \
  --leader-elect=false \
  --service-account-private-key-file="$T/certs/sa.key" \
  --root-ca-file="$T/certs/apiserver.crt" \
  --cluster-name=smoke \
  >"$T/kube-controller-manager.log" 2>&1 &
PIDS+=($!) NAMES+=(kube-controller-manager)
wait_for kube-controller-manager 60 "${PIDS[-1]}" curl -fsS -k "https://127.0.0.1:$CP/healthz"
echo "smoke: kube-controller-manager /healthz ok on 127.0.0.1:$CP in $(secs_since "$t0")s"
# The serviceaccount controller creates "default" in every namespace: proof the controllers run.
wait_for kube-controller-manager 60 "${PIDS[-1]}" api /api/v1/namespaces/default/serviceaccounts/default
echo "smoke: serviceaccount default/default created by the controller-manager $(secs_since "$t0")s after start"
echo "smoke: ok"
