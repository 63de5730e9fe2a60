#!/usr/bin/env bash
# Validates the Kubernetes deployment without a cluster or Docker:
#   1. helm (deploy/setup.sh builds it from the Go module proxy, once)
#   2. helm lint --strict and helm template with every deploy/helm/jobwire/ci/*-values.yaml
#      (helm checks the values against values.schema.json first)
#   3. values that must be refused are refused (helm template fails): by the
#      schema (wrong type, unknown key, bad enum or pattern) or the templates
#   4. go test in deploy/validate: strict decoding of every rendered object into
#      the Kubernetes API types (the Prometheus Operator's for ServiceMonitor,
#      PodMonitor, PrometheusRule) plus cross-checks (against the values file
#      it was rendered from: Secrets made outside the chart, TLS and tokens,
#      image digest); alert expressions and the Grafana dashboard's queries
#      parsed with the Prometheus parser and checked against the metrics
#      table of docs/operations.md; the chart README generated from
#      values.yaml is up to date and documents every value; negative cases
#      proving the validator fails; the Dockerfile's COPY sources and apt
#      packages.
#   The web dashboard (dashboard.*): schema and template refusals above, the
#   dashboard's objects present exactly when enabled, and its checks in
#   deploy/validate (webdash.go).
# Exits non-zero on any failure.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUILD_ROOT="${JOBWIRE_BUILD_DIR:-$ROOT/build}"
mkdir -p "$BUILD_ROOT/go/bin"
BIN="$(cd "$BUILD_ROOT" && pwd)/go/bin"
CHART="$HERE/helm/jobwire"

# Kubernetes version the chart is rendered for (capabilities, kubeVersion).
KUBE_VERSION=1.32.0

step() { printf '\n== %s\n' "$*"; }
t0=$(date +%s)

if ! command -v go >/dev/null 2>&1; then
  echo "deploy/test.sh: go not found on PATH (Go >= 1.26.7 is needed: deploy/validate/go.mod)" >&2
  exit 1
fi

HELM="$BIN/helm"
# Builds helm when it is missing (scripts/setup.sh has normally done it).
"$HERE/setup.sh"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Keep helm's config/cache out of $HOME.
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"
RENDERED="$WORK/rendered"
mkdir -p "$RENDERED"

shopt -s nullglob
values=("$CHART"/ci/*-values.yaml)
if [ ${#values[@]} -eq 0 ]; then
  echo "deploy/test.sh: no values files in $CHART/ci" >&2
  exit 1
fi

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for v in "${values[@]}"; do
  name="$(basename "$v" -values.yaml)"
  step "helm lint --strict / template: ci/$(basename "$v")"
  if ! "$HELM" lint --strict --kube-version "$KUBE_VERSION" "$CHART" -f "$v"; then
    fail "helm lint --strict with $(basename "$v")"
  fi
  if "$HELM" template jobwire "$CHART" --namespace queues --kube-version "$KUBE_VERSION" \
       -f "$v" > "$RENDERED/$name.yaml"; then
    echo "rendered $(grep -c '^kind:' "$RENDERED/$name.yaml") objects"
  else
    fail "helm template with $(basename "$v")"
    rm -f "$RENDERED/$name.yaml"
  fi
done

# The preStop hook on the oldest supported Kubernetes (Chart.yaml kubeVersion
# >= 1.27: no sleep lifecycle action before 1.30) and on KUBE_VERSION: the
# default useSleepAction=auto picks exec there and sleep here. The 1.27
# render of ci/old-kube-values.yaml replaces its KUBE_VERSION one, so that
# deploy/validate checks it.
step "preStop by Kubernetes version (useSleepAction=auto)"
prestop_kind() { # kube-version -> "sleep" or "exec" (the line after preStop:)
  "$HELM" template jobwire "$CHART" --kube-version "$1" -f "$CHART/ci/old-kube-values.yaml" \
    | grep -A1 'preStop:' | tail -1 | tr -d ' :'
}
if "$HELM" template jobwire "$CHART" --namespace queues --kube-version 1.27.0 \
     -f "$CHART/ci/old-kube-values.yaml" > "$RENDERED/old-kube.yaml"; then
  [ "$(prestop_kind 1.27.0)" = exec ] || fail "Kubernetes 1.27: preStop is $(prestop_kind 1.27.0), not exec"
  [ "$(prestop_kind "$KUBE_VERSION")" = sleep ] || fail "Kubernetes $KUBE_VERSION: preStop is $(prestop_kind "$KUBE_VERSION"), not sleep"
  echo "preStop: exec on 1.27, sleep on $KUBE_VERSION"
else
  fail "helm template --kube-version 1.27.0"
fi

# Values the chart must refuse, with the message it must give.
step "values that must be refused"
refuse() { # want-message helm-args...
  local want="$1"; shift
  local out
  if out="$("$HELM" template jobwire "$CHART" --kube-version "$KUBE_VERSION" "$@" 2>&1)"; then
    fail "helm template $* rendered, but should have failed with: $want"
  elif ! grep -qF -- "$want" <<<"$out"; then
    fail "helm template $* failed without \"$want\": $out"
  else
    echo "refused as expected: $*"
  fi
}
refuse "set exactly one of redis.url" --set image.tag=no-redis-configured # no Redis at all: the image has no embedded redis-server
refuse "set exactly one of redis.url" --set redis.url=redis://r:6379 --set redis.enabled=true
refuse "must exceed lifecycle.preStopSleepSeconds" --set redis.url=redis://r:6379 --set terminationGracePeriodSeconds=30
refuse "must be noeviction" --set redis.enabled=true --set redis.maxmemoryPolicy=allkeys-lru
refuse "at '/redis/appendfsync': value must be one of 'always', 'everysec'" --set redis.enabled=true --set redis.appendfsync=no
refuse "minReplicas must not exceed" --set redis.url=redis://r:6379 --set autoscaling.minReplicas=5 --set autoscaling.maxReplicas=4
refuse "tls.clientAuth=true needs tls.existingSecret" --set redis.url=redis://r:6379 --set tls.clientAuth=true
refuse "broker.healthPort (50051) must differ" --set redis.url=redis://r:6379 --set tls.existingSecret=jobwire-tls --set broker.healthPort=50051
refuse "auth.existingSecret needs auth.tokensKey" --set redis.url=redis://r:6379 --set auth.existingSecret=jobwire-tokens --set auth.tokensKey=
refuse "redis.tls.clientCert=true needs redis.tls.existingSecret" --set redis.url=rediss://r:6380 --set redis.tls.clientCert=true
refuse "redis.tls.* needs a rediss:// redis.url" --set redis.url=redis://r:6379 --set redis.tls.existingSecret=jobwire-redis-tls
refuse "the in-chart Redis (redis.enabled) is plaintext" --set redis.enabled=true --set redis.tls.serverName=redis.example
refuse "at '/redis/mode': value must be one of 'standalone', 'sentinel', 'cluster'" --set redis.url=redis://r:6379 --set redis.mode=replicated
refuse "redis.sentinelMaster needs redis.mode=sentinel" --set redis.url=redis://r:6379 --set redis.mode=cluster --set redis.sentinelMaster=jobwire
refuse "the in-chart Redis (redis.enabled) is standalone" --set redis.enabled=true --set redis.mode=cluster
refuse "redis.mode=sentinel needs redis.sentinelMaster" --set redis.url=redis://s1:26379 --set redis.mode=sentinel
refuse "redis.sentinelMaster needs redis.mode=sentinel" --set redis.url=redis://r:6379 --set redis.sentinelMaster=jobwire
refuse "the in-chart Redis (redis.enabled) is standalone" --set redis.enabled=true --set redis.mode=sentinel --set redis.sentinelMaster=jobwire
refuse "at '/lifecycle/useSleepAction': value must be one of 'auto', true, false, 'true', 'false'" --set redis.url=redis://r:6379 --set lifecycle.useSleepAction=maybe
refuse "lifecycle.useSleepAction=true needs Kubernetes >= 1.30" --set redis.url=redis://r:6379 --set lifecycle.useSleepAction=true --kube-version 1.28.0
# values.schema.json: wrong types, unknown keys, values outside a fixed set or a pattern.
refuse "at '/broker/grpcPort': got string, want integer" --set redis.url=redis://r:6379 --set broker.grpcPort=fifty
refuse "at '/replicaCount': got string, want integer" --set redis.url=redis://r:6379 --set-string replicaCount=3
refuse "at '/image/tag': got number, want string" --set redis.url=redis://r:6379 --set image.tag=20240101
# YAML reads an unquoted tag 1.10 as the number 1.1: refused, not rendered as jobwire:1.1.
printf 'redis:\n  url: redis://r:6379\nimage:\n  tag: 1.10\n' > "$WORK/float-tag-values.yaml"
refuse "at '/image/tag': got number, want string" -f "$WORK/float-tag-values.yaml"
refuse "at '/broker': additional properties 'grpcPrt' not allowed" --set redis.url=redis://r:6379 --set broker.grpcPrt=50051
refuse "at '': additional properties 'replicas' not allowed" --set redis.url=redis://r:6379 --set replicas=2
refuse "at '/broker/logLevel': value must be one of 'debug', 'info', 'warning', 'error'" --set redis.url=redis://r:6379 --set broker.logLevel=verbose
refuse "at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'" --set redis.url=redis://r:6379 --set image.pullPolicy=always
refuse "at '/image/digest': 'sha256:abc' does not match pattern" --set redis.url=redis://r:6379 --set image.digest=sha256:abc
refuse "at '/broker/metricsPort': maximum: got 70,000, want 65,535" --set redis.url=redis://r:6379 --set broker.metricsPort=70000
refuse "at '/broker/reloadIntervalMs': minimum: got 10, want 100" --set redis.url=redis://r:6379 --set broker.reloadIntervalMs=10
refuse "at '/metrics/serviceMonitor/interval': '30 s' does not match pattern" --set redis.url=redis://r:6379 --set "metrics.serviceMonitor.interval=30 s"
refuse "at '/redis/url': 'http://r:6379' does not match pattern" --set redis.url=http://r:6379
# Monitoring and NetworkPolicy combinations that cannot work.
refuse "choose one (with both, every broker is scraped twice" --set redis.url=redis://r:6379 --set metrics.serviceMonitor.enabled=true --set metrics.podMonitor.enabled=true
refuse "metrics.serviceMonitor.enabled needs metrics.service.enabled" --set redis.url=redis://r:6379 --set metrics.serviceMonitor.enabled=true --set metrics.service.enabled=false
refuse "metrics.prometheusRule.enabled needs metrics.serviceMonitor or metrics.podMonitor enabled" --set redis.url=redis://r:6379 --set metrics.prometheusRule.enabled=true
refuse "networkPolicy.enabled with an external Redis needs networkPolicy.egress.redisTo" --set redis.url=redis://r:6379 --set networkPolicy.enabled=true
# The web dashboard: wrong types, unknown keys, values outside a set, and
# combinations that cannot work.
refuse "at '/dashboard/enabled': got string, want boolean" --set redis.url=redis://r:6379 --set dashboard.enabled=yes
refuse "at '/dashboard/readOnly': got number, want boolean" --set redis.url=redis://r:6379 --set dashboard.readOnly=1
refuse "at '/dashboard/port': got string, want integer" --set redis.url=redis://r:6379 --set dashboard.port=http
refuse "at '/dashboard/service/port': maximum: got 80,800, want 65,535" --set redis.url=redis://r:6379 --set dashboard.service.port=80800
refuse "at '/dashboard/image/tag': got number, want string" --set redis.url=redis://r:6379 --set dashboard.image.tag=20240101
refuse "at '/dashboard/image/digest': 'sha256:abc' does not match pattern" --set redis.url=redis://r:6379 --set dashboard.image.digest=sha256:abc
refuse "at '/dashboard': additional properties 'servce' not allowed" --set redis.url=redis://r:6379 --set dashboard.servce.port=80
refuse "at '/dashboard/ingress': additional properties 'hosts' not allowed" --set redis.url=redis://r:6379 --set "dashboard.ingress.hosts[0]=jobwire.example.com"
refuse "at '/dashboard/requireLogin': value must be one of 'auto', true, false, 'true', 'false'" --set redis.url=redis://r:6379 --set dashboard.requireLogin=maybe
refuse "at '/dashboard/ingress/pathType': value must be one of 'Prefix', 'Exact', 'ImplementationSpecific'" --set redis.url=redis://r:6379 --set dashboard.ingress.pathType=prefix
refuse "at '/dashboard/ingress/path': 'admin' does not match pattern" --set redis.url=redis://r:6379 --set dashboard.ingress.path=admin
refuse "at '/dashboard/pollIntervalMs': minimum: got 10, want 100" --set redis.url=redis://r:6379 --set dashboard.pollIntervalMs=10
refuse "at '/dashboard/publicOrigin': 'https://jobwire.example.com/ui' does not match pattern" --set redis.url=redis://r:6379 --set dashboard.publicOrigin=https://jobwire.example.com/ui
refuse "dashboard.ingress.enabled needs dashboard.enabled" --set redis.url=redis://r:6379 --set dashboard.ingress.enabled=true
refuse "dashboard.enabled with tls.clientAuth needs dashboard.brokerClientCert.existingSecret" --set redis.url=redis://r:6379 --set tls.existingSecret=jobwire-tls --set tls.clientAuth=true --set dashboard.enabled=true
refuse "networkPolicy.enabled with dashboard.ingress.enabled needs networkPolicy.ingress.dashboardFrom" --set redis.enabled=true --set networkPolicy.enabled=true --set dashboard.enabled=true --set dashboard.ingress.enabled=true
refuse "networkPolicy.enabled with dashboard.broker" --set redis.enabled=true --set networkPolicy.enabled=true --set dashboard.enabled=true --set dashboard.broker=other.example:50051
refuse "dashboard.replicas=2 needs dashboard.sessionKey.existingSecret" --set redis.url=redis://r:6379 --set dashboard.enabled=true --set dashboard.replicas=2
refuse "at '/dashboard/replicas': minimum: got 0, want 1" --set redis.url=redis://r:6379 --set dashboard.replicas=0
refuse "dashboard.requireLogin=false with auth.existingSecret" --set redis.url=redis://r:6379 --set auth.existingSecret=jobwire-tokens --set dashboard.enabled=true --set dashboard.requireLogin=false

# The dashboard off renders no dashboard object; on, the objects below
# (deploy/validate checks their content against the values).
step "dashboard objects by values"
kinds_of() { # rendered file -> "Kind/name" lines of the dashboard's objects
  awk '/^kind:/ {k = $2; next} k != "" && /^  name:/ {print k "/" $2; k = ""}' "$1" \
    | { grep -- '-dashboard$' || true; } | sort | tr '\n' ' '
}
expect_kinds() { # values-name want
  local got
  got="$(kinds_of "$RENDERED/$1.yaml")"
  if [ "$got" = "$2" ]; then echo "$1: ${got:-no dashboard objects}"; else fail "$1: dashboard objects \"$got\", want \"$2\""; fi
}
expect_kinds default ""
expect_kinds tls-auth ""
expect_kinds dashboard "Deployment/jobwire-dashboard Service/jobwire-dashboard "
expect_kinds dashboard-tls-auth "Deployment/jobwire-dashboard Ingress/jobwire-dashboard Service/jobwire-dashboard "
expect_kinds dashboard-networkpolicy "Deployment/jobwire-dashboard Ingress/jobwire-dashboard NetworkPolicy/jobwire-dashboard Service/jobwire-dashboard "

step "go test deploy/validate (strict decoding + cross-checks, negative cases, Dockerfile)"
(cd "$HERE/validate" && JOBWIRE_RENDERED_DIR="$RENDERED" JOBWIRE_VALUES_DIR="$CHART/ci" go test -count=1 -v ./... 2>&1) | tee "$WORK/gotest.log" \
  | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+.*\.go:[0-9]+:)' | grep -v '^=== RUN' || true
if ! grep -q '^ok' "$WORK/gotest.log"; then
  cat "$WORK/gotest.log" >&2
  fail "go test in deploy/validate"
fi

echo
echo "deploy/test.sh: ${#values[@]} values files, $failures failure(s), $(( $(date +%s) - t0 )) s"
[ "$failures" -eq 0 ]
