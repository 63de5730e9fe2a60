package validate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// dashboardFile is deploy/grafana/jobwire-dashboard.json; the chart ships a
// copy (a chart cannot read files outside its directory).
var (
	dashboardFile      = filepath.Join("..", "grafana", "jobwire-dashboard.json")
	chartDashboardFile = filepath.Join("..", "helm", "jobwire", "dashboards", "jobwire-dashboard.json")
	chartDir           = filepath.Join("..", "helm", "jobwire")
)

// checkDashboardConfigMaps wants every rendered dashboard ConfigMap to hold
// exactly deploy/grafana/jobwire-dashboard.json.
func checkDashboardConfigMaps(t *testing.T, objs []Object) []error {
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, o := range objs {
		cm, ok := o.Obj.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		if got, ok := cm.Data["jobwire-dashboard.json"]; ok && strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
			errs = append(errs, fmt.Errorf("ConfigMap %s: jobwire-dashboard.json is not deploy/grafana/jobwire-dashboard.json", cm.Name))
		}
	}
	return errs
}

func mustCatalog(t *testing.T) Catalog {
	t.Helper()
	cat, err := metricsCatalog()
	if err != nil {
		t.Fatalf("metrics table of %s: %v", metricsDoc(), err)
	}
	return cat
}

// TestMetricsDoc: the metrics table parses, and has every metric the
// chart's alerts and the dashboard are built on.
func TestMetricsDoc(t *testing.T) {
	cat := mustCatalog(t)
	for _, name := range []string{
		"jobwire_jobs_enqueued_total", "jobwire_jobs_claimed_total", "jobwire_jobs_acked_total", "jobwire_jobs_failed_total",
		"jobwire_jobs_retried_total", "jobwire_jobs_dead_total", "jobwire_jobs_lease_expired_total",
		"jobwire_job_claim_wait_seconds", "jobwire_job_run_seconds", "jobwire_rpc_requests_total", "jobwire_rpc_duration_seconds",
		"jobwire_claim_streams_open", "jobwire_queue_claim_streams", "jobwire_queue_jobs", "jobwire_queue_oldest_due_age_seconds",
		"jobwire_build_info", "jobwire_redis_up", "jobwire_redis_roundtrip_seconds",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds",
	} {
		if cat[name] == nil {
			t.Errorf("%s is not in the metrics table of %s", name, metricsDoc())
		}
	}
	if m := cat["jobwire_queue_jobs"]; m != nil && (!m.Labels["state"] || !m.Words["pending_due"] || !m.Words["dead"]) {
		t.Errorf("jobwire_queue_jobs: labels %v, words %v: want label state and states pending_due, dead", m.Labels, m.Words)
	}
}

// TestCheckExpr: the PromQL checks accept good expressions and catch
// broken ones.
func TestCheckExpr(t *testing.T) {
	cat := mustCatalog(t)
	for _, tc := range []struct{ expr, want string }{
		{`sum by (queue) (rate(jobwire_jobs_dead_total{job="j"}[5m])) > 0`, ""},
		{`histogram_quantile(0.99, sum by (le, method) (rate(jobwire_rpc_duration_seconds_bucket{job="j"}[5m])))`, ""},
		{`up{job="j"} == 0`, ""},
		{`jobwire_queue_oldest_due_age_seconds > 1e+06`, ""}, // helm prints a large threshold so
		{`max by (queue) (jobwire_queue_jobs{state="pending_due"}) > 0 unless on (queue) sum by (queue) (jobwire_queue_claim_streams) > 0`, ""},
		{`sum by (queue) (rate(jobwire_jobs_dead_total[5m]) >`, "does not parse"},
		{`sum(rate(jobwire_jobs_dead_total[5m])`, "does not parse"},
		{`rate(jobwire_jobs_deadd_total[5m])`, "jobwire_jobs_deadd_total is not in the broker's metrics table"},
		{`jobwire_queue_jobs_bucket`, "is not in the broker's metrics table"}, // a gauge has no buckets
		{`sum by (queue_name) (jobwire_queue_jobs)`, `label "queue_name"`},
		{`jobwire_queue_jobs{state="pending"}`, `state "pending" is not one the docs list`},
		{`sum by (le) (jobwire_queue_jobs)`, `label "le"`},
		{`{job="j"}`, "no metric name"},
	} {
		_, errs := CheckExpr(tc.expr, cat)
		got := joinErrs(errs)
		if tc.want == "" && got != "" {
			t.Errorf("%s:%s", tc.expr, got)
		}
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: want an error containing %q, got:%s", tc.expr, tc.want, got)
		}
	}
}

// TestDashboard checks deploy/grafana/jobwire-dashboard.json and that the
// chart's copy is the same file.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if errs := CheckDashboard(data, mustCatalog(t)); len(errs) > 0 {
		t.Fatalf("%s: %d problem(s):%s", dashboardFile, len(errs), joinErrs(errs))
	}
	chartCopy, err := os.ReadFile(chartDashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, chartCopy) {
		t.Fatalf("%s differs from %s: cp %s %s", chartDashboardFile, dashboardFile, dashboardFile, chartDashboardFile)
	}
}

// TestDashboardRejects breaks the dashboard in one place per case.
func TestDashboardRejects(t *testing.T) {
	good, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	cat := mustCatalog(t)
	for _, tc := range []struct{ name, old, new, want string }{
		{"broken expression", `"expr": "sum(up{`, `"expr": "sum(up{{`, "does not parse"},
		{"unknown metric", `jobwire_jobs_acked_total{namespace=`, `jobwire_jobs_ackd_total{namespace=`, "jobwire_jobs_ackd_total is not in the broker's metrics table"},
		{"unknown label", `sum by (queue) (rate(jobwire_jobs_acked_total`, `sum by (queue_name) (rate(jobwire_jobs_acked_total`, `label "queue_name"`},
		{"old schema", `"schemaVersion": 39`, `"schemaVersion": 27`, "schemaVersion 27 is older than 36"},
		{"no datasource variable", `"type": "datasource"`, `"type": "custom"`, "no datasource variable"},
		{"fixed datasource", `"uid": "${datasource}"
      },
      "targets"`, `"uid": "prometheus"
      },
      "targets"`, "is not the ${datasource} variable"},
		{"no queue variable", `"name": "queue"`, `"name": "queues"`, "no queue variable"},
		{"bad variable query", `"query": "label_values(jobwire_build_info, namespace)"`, `"query": "label_values(jobwire_build_inf, namespace)"`, "jobwire_build_inf is not in the broker's metrics table"},
		{"variable definition differs", `"definition": "label_values(jobwire_build_info, namespace)"`, `"definition": "label_values(up, namespace)"`, "differs from its query"},
		{"not scoped by namespace", `sum(rate(jobwire_jobs_enqueued_total{namespace=\"$namespace\",`, `sum(rate(jobwire_jobs_enqueued_total{`, `is not scoped by namespace="$namespace"`},
		{"not scoped by job", `sum(up{namespace=\"$namespace\",job=\"$job\"})`, `sum(up{namespace=\"$namespace\"})`, `is not scoped by job="$job"`},
		{"not JSON", `"panels": [`, `"panels": [[`, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !bytes.Contains(good, []byte(tc.old)) {
				t.Fatalf("the dashboard no longer contains %q; update the case", tc.old)
			}
			broken := bytes.Replace(good, []byte(tc.old), []byte(tc.new), 1)
			got := joinErrs(CheckDashboard(broken, cat))
			if !strings.Contains(got, tc.want) {
				t.Fatalf("want an error containing %q, got:%s", tc.want, got)
			}
		})
	}
}

// TestRejectsBrokenMonitoring breaks the ServiceMonitor + PrometheusRule
// fixture: alert expressions, durations, templates, job scoping, the
// monitor's port, selector and relabelings, the metrics Service.
func TestRejectsBrokenMonitoring(t *testing.T) {
	cases := []brokenCase{
		{"alert expression does not parse", `job="jobwire-metrics"}) > 120`, `job="jobwire-metrics"}) > > 120`, "expr does not parse"},
		{"undocumented metric", "jobwire_queue_oldest_due_age_seconds{", "jobwire_queue_oldest_due_seconds{", "jobwire_queue_oldest_due_seconds is not in the broker's metrics table"},
		{"undocumented label", "max by (namespace, queue) (jobwire_queue_oldest", "max by (namespace, queue_name) (jobwire_queue_oldest", `label "queue_name" is neither`},
		{"unknown state", `state="pending_due"`, `state="pending"`, `state "pending" is not one the docs list`},
		{"selector without job", `jobwire_redis_up{namespace="queues",job="jobwire-metrics"}`, `jobwire_redis_up{namespace="queues"}`, `has no job="..." matcher`},
		{"job the monitor does not give", `jobwire_redis_up{namespace="queues",job="jobwire-metrics"}`, `jobwire_redis_up{namespace="queues",job="jobwire"}`, "the alert would never fire"},
		{"bad for", "          for: 2m\n", "          for: 2 minutes\n", `"2 minutes" is not a Prometheus duration`},
		{"broken annotation template", "{{ $labels.instance }} cannot reach Redis", "{{ $labels.instance } cannot reach Redis", "is not a valid alert template"},
		{"no severity", `            severity: "critical"` + "\n            team: queues\n          annotations:\n            summary: \"Broker {{ $labels.instance }} cannot reach", "            team: queues\n          annotations:\n            summary: \"Broker {{ $labels.instance }} cannot reach", "no severity label"},
		{"misspelled rule field", "          for: 2m\n", "          fr: 2m\n", `unknown field "spec.groups[0].rules[2].fr"`},
		{"misspelled monitor field", "scrapeTimeout: 5s", "scrapeTimout: 5s", `unknown field "spec.endpoints[0].scrapeTimout"`},
		{"monitor port name", "    - port: metrics\n      path: /metrics", "    - port: metric\n      path: /metrics", `port "metric" is not a port name of Service jobwire-metrics`},
		{"monitor selects no Service", "      app.kubernetes.io/component: metrics\n  # Explicit", "      app.kubernetes.io/component: metricz\n  # Explicit", "matches 0 rendered Services"},
		{"nothing scrapes", "      app.kubernetes.io/component: metrics\n  # Explicit", "      app.kubernetes.io/component: metricz\n  # Explicit", "nothing tells Prometheus to scrape the brokers"},
		{"monitor in every namespace", "  namespaceSelector:\n    matchNames:\n      - queues", "  namespaceSelector:\n    any: true", "namespaceSelector must name the release's namespace"},
		{"timeout above interval", "scrapeTimeout: 5s", "scrapeTimeout: 20s", "scrapeTimeout 20s is longer than interval 15s"},
		{"bad interval", "interval: 15s", "interval: 15 s", `"15 s" is not a Prometheus duration`},
		{"service label kept", "        - action: labeldrop\n          regex: service\n", "", "clashes with the gRPC service label"},
		{"bad relabel action", "- action: drop\n", "- action: dropp\n", `relabel action "dropp"`},
		{"bad scheme", "      scheme: http\n", "      scheme: tcp\n", `scheme "tcp" is not http or https`},
		{"metrics Service hides unready pods", "  publishNotReadyAddresses: true", "  publishNotReadyAddresses: false", "should publish not-ready addresses"},
		{"metrics Service on another port", "      targetPort: metrics", "      targetPort: 9090", "is not the broker's metrics port 9464"},
		{"duplicate alert", "        - alert: JobwireBrokerDown", "        - alert: JobwireRedisDown", "alert JobwireRedisDown defined twice"},
	}
	runBroken(t, "good-monitoring.yaml", fixtures[2].external, cases)
}

// TestRejectsBrokenPodMonitor breaks the PodMonitor fixture.
func TestRejectsBrokenPodMonitor(t *testing.T) {
	cases := []brokenCase{
		{"port name", "    - port: metrics\n      path: /metrics", "    - port: grpc\n      path: /metrics", `port "grpc" is not the name of the broker's metrics container port`},
		{"selects no pods", "      app.kubernetes.io/component: broker\n  # Explicit", "      app.kubernetes.io/component: worker\n  # Explicit", "PodMonitor jobwire: selector matches 0 workloads' pods"},
		{"renamed: alerts' job is stale", "kind: PodMonitor\nmetadata:\n  name: jobwire\n", "kind: PodMonitor\nmetadata:\n  name: jobwire-broker\n", `has job="queues/jobwire", but the rendered monitor gives the brokers job [queues/jobwire-broker]`},
		{"extra rule not scoped", `{namespace="queues",job="queues/jobwire"}[5m]`, `{namespace="queues"}[5m]`, "JobwireClaimWaitHigh): selector"},
	}
	runBroken(t, "good-podmonitor.yaml", fixtures[3].external, cases)
}

// TestRejectsBrokenNetworkPolicy breaks the NetworkPolicy fixture (and the
// digest-pinned image and Secret mounts it has).
func TestRejectsBrokenNetworkPolicy(t *testing.T) {
	cases := []brokenCase{
		{"ingress port not declared", "        - port: metrics\n          protocol: TCP\n      from:", "        - port: metricz\n          protocol: TCP\n      from:", `port "metricz" is not a container port name of Deployment jobwire`},
		{"metrics port not admitted", "        - port: metrics\n          protocol: TCP\n      from:", "        - port: grpc\n          protocol: TCP\n      from:", "no ingress rule admits the metrics port 9464"},
		{"gRPC admits everyone", "        - port: grpc\n          protocol: TCP\n      from:\n        - podSelector: {}\n        - namespaceSelector:\n            matchLabels:\n              kubernetes.io/metadata.name: billing\n", "        - port: grpc\n          protocol: TCP\n", "no from: it admits every source"},
		{"no DNS", "        - port: 53\n          protocol: UDP\n", "        - port: 54\n          protocol: UDP\n", "allows no DNS"},
		{"Redis port", "        - port: 6379\n          protocol: TCP\n      to:", "        - port: 6380\n          protocol: TCP\n      to:", "no egress rule allows the in-chart Redis pods on port 6379"},
		{"Redis admits others", "      from:\n        - podSelector:\n            matchLabels:\n              app.kubernetes.io/name: jobwire\n              app.kubernetes.io/instance: jobwire\n              app.kubernetes.io/component: broker", "      from:\n        - podSelector:\n            matchLabels:\n              app.kubernetes.io/name: jobwire\n              app.kubernetes.io/instance: jobwire\n              app.kubernetes.io/component: worker", "does not admit the broker pods to Redis port 6379"},
		{"policy selects nothing", "kind: NetworkPolicy\nmetadata:\n  name: jobwire\n  labels:\n    helm.sh/chart: jobwire-0.1.0\n    app.kubernetes.io/name: jobwire\n    app.kubernetes.io/instance: jobwire\n    app.kubernetes.io/version: \"1.2.3\"\n    app.kubernetes.io/managed-by: Helm\n    app.kubernetes.io/part-of: jobwire\n    app.kubernetes.io/component: broker\nspec:\n  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: jobwire\n      app.kubernetes.io/instance: jobwire\n      app.kubernetes.io/component: broker", "kind: NetworkPolicy\nmetadata:\n  name: jobwire\nspec:\n  podSelector:\n    matchLabels:\n      app.kubernetes.io/component: brokers", "NetworkPolicy jobwire: podSelector matches 0 workloads' pods"},
		{"misspelled field", "  policyTypes:\n    - Ingress\n    - Egress", "  policyType:\n    - Ingress\n    - Egress", `unknown field "spec.policyType"`},
		{"bad digest", "@sha256:0123456789abcdef", "@sha256:XYZ3456789abcdef", `image digest "sha256:XYZ3456789abcdef`},
		{"Secret mounted with subPath", "              mountPath: /etc/jobwire/tls\n              readOnly: true", "              mountPath: /etc/jobwire/tls\n              readOnly: true\n              subPath: tls.crt", `volumeMount "tls" of a Secret uses subPath "tls.crt"`},
		{"reload interval too short", "            - name: JOBWIRE_RELOAD_INTERVAL_MS\n              value: \"10000\"", "            - name: JOBWIRE_RELOAD_INTERVAL_MS\n              value: \"10\"", `JOBWIRE_RELOAD_INTERVAL_MS "10" is not a number of ms >= 100`},
	}
	runBroken(t, "good-networkpolicy.yaml", fixtures[4].external, cases)
}

// TestImageValues: the image follows image.digest.
func TestImageValues(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "good-networkpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := Decode("good-networkpolicy.yaml", data)
	if len(errs) > 0 {
		t.Fatal(joinErrs(errs))
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ values, want string }{
		{"image:\n  repository: registry.example.com/jobwire\n  digest: " + digest + "\n", ""},
		{"image:\n  repository: registry.example.com/jobwire\n  tag: \"1.2.3\"\n", "has a digest, but values image.digest is empty"},
		{"image:\n  repository: registry.example.com/jobwire\n  digest: sha256:" + strings.Repeat("f", 64) + "\n", "but values image.digest is"},
	} {
		got := joinErrs(CheckImageValues(objs, []byte(tc.values)))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("values %q: want %q, got:%s", tc.values, tc.want, got)
		}
	}
}

// TestChartReadme: every value is documented, in the schema, and README.md
// is what cmd/chartdoc makes of them.
func TestChartReadme(t *testing.T) {
	want, errs := ChartReadme(chartDir)
	if len(errs) > 0 {
		t.Fatalf("values documentation:%s", joinErrs(errs))
	}
	have, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("deploy/helm/jobwire/README.md is out of date: run (cd deploy/validate && go run ./cmd/chartdoc)")
	}
}

// TestValuesDocsRejects: an undocumented value, one the schema lacks, and
// one the schema accepts but values.yaml does not list are all errors.
func TestValuesDocsRejects(t *testing.T) {
	const schema = `{"type": "object", "additionalProperties": false, "properties": {
	  "a": {"type": "object", "additionalProperties": false, "properties": {"b": {"type": "integer"}, "c": {"type": "string"}}},
	  "d": {"type": "object"}}}`
	for _, tc := range []struct{ values, want string }{
		{"a:\n  # -- B.\n  b: 1\n  # -- C.\n  c: x\n# -- D.\nd: {}\n", ""},
		{"a:\n  b: 1\n  # -- C.\n  c: x\n# -- D.\nd: {}\n", "values.yaml a.b: no description"},
		{"a:\n  # -- B.\n  b: 1\n  # A plain comment is not a description.\n  c: x\n# -- D.\nd: {}\n", "values.yaml a.c: no description"},
		{"a:\n  # -- B.\n  b: 1\n  # -- C.\n  c: x\n  # -- E.\n  e: 2\n# -- D.\nd: {}\n", "values.yaml a.e: not in values.schema.json"},
		{"a:\n  # -- B.\n  b: 1\n# -- D.\nd: {}\n", "values.schema.json accepts a.c, which values.yaml does not list"},
		{"a:\n  # -- B.\n\n  b: 1\n  # -- C.\n  c: x\n# -- D.\nd: {}\n", "values.yaml a.b: no description"},
	} {
		docs, errs := ValuesDocs([]byte(tc.values), []byte(schema))
		got := joinErrs(errs)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("values %q: want %q, got:%s", tc.values, tc.want, got)
		}
		if tc.want == "" && (len(docs) != 3 || docs[0].Path != "a.b" || docs[0].Type != "integer" || docs[2].Default != "{}") {
			t.Errorf("values %q: docs %+v", tc.values, docs)
		}
	}
}
