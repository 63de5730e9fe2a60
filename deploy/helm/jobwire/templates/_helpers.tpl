{{/*
Chart name, truncated to the 63 characters a DNS label allows.
*/}}
{{- define "jobwire.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: the release name, prefixed with the chart name unless it already
contains it. "jobwire" for `helm install jobwire`.
*/}}
{{- define "jobwire.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "jobwire.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Standard labels (https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/).
*/}}
{{- define "jobwire.labels" -}}
helm.sh/chart: {{ include "jobwire.chart" . }}
app.kubernetes.io/name: {{ include "jobwire.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jobwire
{{- end }}

{{/*
Selector labels of the broker pods. The component label keeps the broker's
Services, PDB and HPA off the in-chart Redis pods.
*/}}
{{- define "jobwire.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jobwire.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: broker
{{- end }}

{{- define "jobwire.redis.fullname" -}}
{{- printf "%s-redis" (include "jobwire.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "jobwire.redis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jobwire.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end }}

{{- define "jobwire.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "jobwire.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Name of the Secret that the chart creates for the Redis URL (and the in-chart
Redis password).
*/}}
{{- define "jobwire.redisSecretName" -}}
{{- printf "%s-redis-url" (include "jobwire.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Checks that exactly one Redis source is configured; fails the render otherwise.
*/}}
{{- define "jobwire.validateRedis" -}}
{{- $n := 0 }}
{{- if .Values.redis.url }}{{ $n = add1 $n }}{{ end }}
{{- if .Values.redis.existingSecret }}{{ $n = add1 $n }}{{ end }}
{{- if .Values.redis.enabled }}{{ $n = add1 $n }}{{ end }}
{{- if ne (int $n) 1 }}
{{- fail "jobwire: set exactly one of redis.url, redis.existingSecret or redis.enabled=true (the image has no embedded redis-server)" }}
{{- end }}
{{- if and .Values.redis.enabled (ne .Values.redis.maxmemoryPolicy "noeviction") }}
{{- fail "jobwire: redis.maxmemoryPolicy must be noeviction (an evicted key is a lost job)" }}
{{- end }}
{{- if and .Values.redis.enabled (not (has .Values.redis.appendfsync (list "always" "everysec"))) }}
{{- fail "jobwire: redis.appendfsync must be always or everysec" }}
{{- end }}
{{- $redisTls := or .Values.redis.tls.existingSecret .Values.redis.tls.serverName }}
{{- if and .Values.redis.tls.clientCert (not .Values.redis.tls.existingSecret) }}
{{- fail "jobwire: redis.tls.clientCert=true needs redis.tls.existingSecret (a Secret with ca.crt, tls.crt and tls.key)" }}
{{- end }}
{{- if and $redisTls .Values.redis.enabled }}
{{- fail "jobwire: redis.tls.* is for an external Redis over rediss://; the in-chart Redis (redis.enabled) is plaintext" }}
{{- end }}
{{- if and $redisTls .Values.redis.url (not (hasPrefix "rediss://" .Values.redis.url)) }}
{{- fail "jobwire: redis.tls.* needs a rediss:// redis.url (the broker refuses TLS files with redis://)" }}
{{- end }}
{{- if not (has .Values.redis.mode (list "standalone" "sentinel" "cluster")) }}
{{- fail (printf "jobwire: redis.mode must be standalone, sentinel or cluster, got %q" (toString .Values.redis.mode)) }}
{{- end }}
{{- if and (eq .Values.redis.mode "sentinel") (not .Values.redis.sentinelMaster) }}
{{- fail "jobwire: redis.mode=sentinel needs redis.sentinelMaster (the master's name)" }}
{{- end }}
{{- if and (ne .Values.redis.mode "sentinel") .Values.redis.sentinelMaster }}
{{- fail "jobwire: redis.sentinelMaster needs redis.mode=sentinel" }}
{{- end }}
{{- if and (ne .Values.redis.mode "standalone") .Values.redis.enabled }}
{{- fail (printf "jobwire: redis.mode=%s is for an external Redis; the in-chart Redis (redis.enabled) is standalone" .Values.redis.mode) }}
{{- end }}
{{- end }}

{{/*
The Redis URL the chart stores in its Secret (redis.url, or the in-chart Redis).
*/}}
{{- define "jobwire.redisURL" -}}
{{- if .Values.redis.url }}
{{- .Values.redis.url }}
{{- else if .Values.redis.enabled }}
{{- $auth := "" }}
{{- if .Values.redis.auth.password }}{{ $auth = printf ":%s@" .Values.redis.auth.password }}{{ end }}
{{- printf "redis://%s%s.%s.svc:%d/%d" $auth (include "jobwire.redis.fullname" .) .Release.Namespace (int .Values.redis.port) (int .Values.redis.db) }}
{{- end }}
{{- end }}

{{/*
preStop sleep seconds and the drain time in whole seconds.
*/}}
{{- define "jobwire.drainSeconds" -}}
{{- div (add (int64 .Values.broker.shutdownGraceMs) 999) 1000 }}
{{- end }}

{{- define "jobwire.terminationGracePeriodSeconds" -}}
{{- $pre := int64 .Values.lifecycle.preStopSleepSeconds }}
{{- $drain := int64 (include "jobwire.drainSeconds" .) }}
{{- if not .Values.terminationGracePeriodSeconds }}
{{- add $pre $drain 10 }}
{{- else }}
{{- $t := int64 .Values.terminationGracePeriodSeconds }}
{{- if le $t (add $pre $drain) }}
{{- fail (printf "jobwire: terminationGracePeriodSeconds (%d) must exceed lifecycle.preStopSleepSeconds + broker.shutdownGraceMs (%d s + %d s)" $t $pre $drain) }}
{{- end }}
{{- $t }}
{{- end }}
{{- end }}

{{/*
Checks the TLS, auth and health-port values; fails the render otherwise.
*/}}
{{- define "jobwire.validateSecurity" -}}
{{- if and .Values.tls.clientAuth (not .Values.tls.existingSecret) }}
{{- fail "jobwire: tls.clientAuth=true needs tls.existingSecret (a Secret with tls.crt, tls.key and the client CA in ca.crt)" }}
{{- end }}
{{- if .Values.tls.existingSecret }}
{{- $h := int .Values.broker.healthPort }}
{{- if or (lt $h 1) (gt $h 65535) }}
{{- fail (printf "jobwire: broker.healthPort (%d) must be a port number (1-65535); with TLS the probes use it" $h) }}
{{- end }}
{{- if or (eq $h (int .Values.broker.grpcPort)) (eq $h (int .Values.broker.metricsPort)) }}
{{- fail (printf "jobwire: broker.healthPort (%d) must differ from broker.grpcPort and broker.metricsPort" $h) }}
{{- end }}
{{- end }}
{{- if and .Values.auth.existingSecret (not .Values.auth.tokensKey) }}
{{- fail "jobwire: auth.existingSecret needs auth.tokensKey (the Secret's key holding the tokens file)" }}
{{- end }}
{{- end }}

{{/*
The broker image: repository@digest when image.digest is set (the tag is then
ignored, so a moved tag cannot change what runs), else repository:tag.
*/}}
{{- define "jobwire.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{- define "jobwire.metrics.serviceName" -}}
{{- printf "%s-metrics" (include "jobwire.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The job label Prometheus gives the brokers' series: the Prometheus Operator
names it after the Service for a ServiceMonitor and <namespace>/<name> of a
PodMonitor. Empty when neither is rendered (the scrape config is not ours).
*/}}
{{- define "jobwire.metrics.job" -}}
{{- if .Values.metrics.serviceMonitor.enabled }}
{{- include "jobwire.metrics.serviceName" . }}
{{- else if .Values.metrics.podMonitor.enabled }}
{{- printf "%s/%s" (default .Release.Namespace .Values.metrics.podMonitor.namespace) (include "jobwire.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Label matchers that every alert puts on every selector, so that the alerts
of one release never fire on another release's (or another app's) series.
*/}}
{{- define "jobwire.metrics.alertSelector" -}}
{{- with .Values.metrics.prometheusRule.selector }}
{{- . }}
{{- else }}
{{- printf "namespace=%q,job=%q" .Release.Namespace (include "jobwire.metrics.job" .) }}
{{- end }}
{{- end }}

{{/*
Checks the metrics, monitoring and NetworkPolicy values; fails the render
otherwise.
*/}}
{{- define "jobwire.validateMetrics" -}}
{{- $m := .Values.metrics }}
{{- if and $m.serviceMonitor.enabled $m.podMonitor.enabled }}
{{- fail "jobwire: metrics.serviceMonitor.enabled and metrics.podMonitor.enabled: choose one (with both, every broker is scraped twice and every sum doubles)" }}
{{- end }}
{{- if and $m.serviceMonitor.enabled (not $m.service.enabled) }}
{{- fail "jobwire: metrics.serviceMonitor.enabled needs metrics.service.enabled (the ServiceMonitor scrapes through the metrics Service)" }}
{{- end }}
{{- if and $m.prometheusRule.enabled (not (or $m.serviceMonitor.enabled $m.podMonitor.enabled $m.prometheusRule.selector)) }}
{{- fail "jobwire: metrics.prometheusRule.enabled needs metrics.serviceMonitor or metrics.podMonitor enabled, or metrics.prometheusRule.selector (label matchers of your scrape job): the alerts must select this release's series" }}
{{- end }}
{{- if and .Values.networkPolicy.enabled (not .Values.redis.enabled) (not .Values.networkPolicy.egress.redisTo) }}
{{- fail "jobwire: networkPolicy.enabled with an external Redis needs networkPolicy.egress.redisTo (its ipBlock CIDRs or selectors), or the brokers cannot reach Redis" }}
{{- end }}
{{- end }}

{{/*
Labels of every alert: severity, then metrics.prometheusRule.alertLabels.
Takes (dict "root" $ "severity" ...).
*/}}
{{- define "jobwire.alertLabels" -}}
severity: {{ .severity | quote }}
{{- with .root.Values.metrics.prometheusRule.alertLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Selector labels of the metrics Service (the ServiceMonitor selects it by
these; the gRPC Services have component broker).
*/}}
{{- define "jobwire.metrics.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jobwire.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: metrics
{{- end }}

{{/*
The web dashboard (dashboard.*): names, labels, image, the broker address,
login, and the checks of its values.
*/}}
{{- define "jobwire.dashboard.fullname" -}}
{{- printf "%s-dashboard" (include "jobwire.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "jobwire.dashboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jobwire.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: dashboard
{{- end }}

{{- define "jobwire.dashboard.image" -}}
{{- $i := .Values.dashboard.image }}
{{- if $i.digest }}
{{- printf "%s@%s" $i.repository $i.digest }}
{{- else }}
{{- printf "%s:%s" $i.repository ($i.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
The broker address the dashboard dials: dashboard.broker, or the chart's
ClusterIP Service by its full DNS name (a name the broker's certificate
carries, docs/deploy.md "How clients connect with TLS").
*/}}
{{- define "jobwire.dashboard.broker" -}}
{{- .Values.dashboard.broker | default (printf "%s.%s.svc.cluster.local:%d" (include "jobwire.fullname" .) .Release.Namespace (int .Values.broker.grpcPort)) }}
{{- end }}

{{/*
"true" when the dashboard asks for a login: dashboard.requireLogin, where
auto means "when the brokers require tokens".
*/}}
{{- define "jobwire.dashboard.requireLogin" -}}
{{- $r := toString .Values.dashboard.requireLogin }}
{{- if eq $r "auto" }}
{{- ternary "true" "false" (not (empty .Values.auth.existingSecret)) }}
{{- else }}
{{- $r }}
{{- end }}
{{- end }}

{{- define "jobwire.validateDashboard" -}}
{{- $d := .Values.dashboard }}
{{- if and $d.ingress.enabled (not $d.enabled) }}
{{- fail "jobwire: dashboard.ingress.enabled needs dashboard.enabled" }}
{{- end }}
{{- if $d.enabled }}
{{- if and .Values.tls.clientAuth (not $d.broker) (not $d.brokerClientCert.existingSecret) }}
{{- fail "jobwire: dashboard.enabled with tls.clientAuth needs dashboard.brokerClientCert.existingSecret (a kubernetes.io/tls Secret with a client certificate the brokers accept)" }}
{{- end }}
{{- if and .Values.networkPolicy.enabled $d.ingress.enabled (not .Values.networkPolicy.ingress.dashboardFrom) }}
{{- fail "jobwire: networkPolicy.enabled with dashboard.ingress.enabled needs networkPolicy.ingress.dashboardFrom (your Ingress controller's pods), or the Ingress cannot reach the dashboard" }}
{{- end }}
{{- if and .Values.networkPolicy.enabled $d.broker }}
{{- fail "jobwire: networkPolicy.enabled with dashboard.broker: the dashboard's policy allows only the chart's brokers; leave dashboard.broker empty" }}
{{- end }}
{{- if and .Values.auth.existingSecret (eq (toString $d.requireLogin) "false") (not $d.broker) }}
{{- fail "jobwire: dashboard.requireLogin=false with auth.existingSecret: the brokers require tokens, so every call of the dashboard would be refused; use auto or true" }}
{{- end }}
{{- if and (gt (int $d.replicas) 1) (not $d.sessionKey.existingSecret) }}
{{- fail (printf "jobwire: dashboard.replicas=%v needs dashboard.sessionKey.existingSecret: without a shared session key each replica knows only the sessions it made" $d.replicas) }}
{{- end }}
{{- if not (has (toString $d.requireLogin) (list "auto" "true" "false")) }}
{{- fail (printf "jobwire: dashboard.requireLogin must be auto, true or false, not %v" $d.requireLogin) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The origin browsers use (JOBWIRE_DASHBOARD_PUBLIC_ORIGIN): dashboard.publicOrigin,
or the Ingress' host (https when the Ingress has TLS); empty otherwise.
*/}}
{{- define "jobwire.dashboard.publicOrigin" -}}
{{- $d := .Values.dashboard }}
{{- if $d.publicOrigin }}
{{- $d.publicOrigin }}
{{- else if and $d.ingress.enabled $d.ingress.host }}
{{- printf "%s://%s" (ternary "https" "http" (not (empty $d.ingress.tls))) $d.ingress.host }}
{{- end }}
{{- end }}
