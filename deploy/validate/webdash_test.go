package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dashboardExternal are the Secrets good-dashboard.yaml's values name.
var dashboardExternal = map[string]bool{"jobwire-tls": true, "jobwire-tokens": true}

func TestDashboardFixturePasses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "good-dashboard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if errs := validate("good-dashboard.yaml", data, dashboardExternal); len(errs) > 0 {
		t.Fatalf("the known-good fixture good-dashboard.yaml fails:%s", joinErrs(errs))
	}
}

// TestRejectsBrokenDashboard breaks the dashboard fixture (broker TLS,
// tokens, NetworkPolicies, Ingress) once per case.
func TestRejectsBrokenDashboard(t *testing.T) {
	const readiness = "              path: /healthz\n              port: http\n              scheme: HTTP\n            failureThreshold: 3\n            periodSeconds: 10"
	const liveness = "              path: /healthz\n              port: http\n              scheme: HTTP\n            failureThreshold: 3\n            initialDelaySeconds: 5"
	const brokerAddr = `value: "jobwire.queues.svc.cluster.local:50051"`
	const caEnv = "            - name: JOBWIRE_DASHBOARD_BROKER_CA\n              value: /etc/jobwire-dashboard/broker-ca/ca.crt\n"
	const npRule = "whatever grpcFrom says.\n    - ports:\n        - port: grpc"
	cases := []brokenCase{
		{"readiness not on /healthz", readiness, strings.Replace(readiness, "/healthz", "/", 1), `readinessProbe asks "/", not /healthz`},
		{"liveness on a page that needs a session", liveness, strings.Replace(liveness, "/healthz", "/login", 1), `livenessProbe asks "/login"`},
		{"HTTPS probe of a plain HTTP listener", readiness, strings.Replace(readiness, "scheme: HTTP", "scheme: HTTPS", 1), "readinessProbe scheme HTTPS, but the dashboard serves HTTP"},
		{"probe on another port", liveness, strings.Replace(liveness, "port: http", "port: 9090", 1), "httpGet probe port 9090 is not a container port"},
		{"loopback listener", `value: "0.0.0.0:8080"`, `value: "127.0.0.1:8080"`, "is loopback"},
		{"listen port not declared", `value: "0.0.0.0:8080"`, `value: "0.0.0.0:9090"`, "listen port 9090 is not a container port"},
		{"no broker address", "            - name: JOBWIRE_DASHBOARD_BROKER\n              " + brokerAddr + "\n", "", "no JOBWIRE_DASHBOARD_BROKER"},
		{"broker address of the dashboard's own Service", brokerAddr, `value: "jobwire-dashboard.queues.svc.cluster.local:50051"`, "Service jobwire-dashboard does not select the broker pods"},
		{"broker address of no Service", brokerAddr, `value: "jobwire-grpc.queues.svc.cluster.local:50051"`, "names no rendered Service (jobwire-grpc)"},
		{"broker address on the wrong port", brokerAddr, `value: "jobwire.queues.svc.cluster.local:9464"`, "Service jobwire has no port 9464"},
		{"broker TLS without its CA", caEnv, "", "JOBWIRE_DASHBOARD_BROKER_CA is not set, but the brokers speak TLS"},
		{"broker CA not from a Secret", "value: /etc/jobwire-dashboard/broker-ca/ca.crt", "value: /tmp/ca.crt", "JOBWIRE_DASHBOARD_BROKER_CA /tmp/ca.crt is on volume tmp, which is not a Secret volume"},
		{"broker CA item missing", "              - key: \"ca.crt\"\n                path: ca.crt\n---", "              - key: \"ca.crt\"\n                path: root.crt\n---", `Secret volume broker-ca has no item with path "ca.crt"`},
		{"tokens without a login", "JOBWIRE_DASHBOARD_REQUIRE_LOGIN\n              value: \"true\"", "JOBWIRE_DASHBOARD_REQUIRE_LOGIN\n              value: \"false\"", "JOBWIRE_DASHBOARD_REQUIRE_LOGIN is not true: every call would be refused"},
		{"misspelled dashboard flag", "JOBWIRE_DASHBOARD_POLL_INTERVAL_MS", "JOBWIRE_DASHBOARD_POLL_MS", "env JOBWIRE_DASHBOARD_POLL_MS is not a dashboard flag"},
		{"HTTPS certificate without key", caEnv, caEnv + "            - name: JOBWIRE_DASHBOARD_TLS_CERT\n              value: /etc/jobwire-dashboard/broker-ca/ca.crt\n", "JOBWIRE_DASHBOARD_TLS_CERT and JOBWIRE_DASHBOARD_TLS_KEY come together"},
		{"brokers require client certificates", "            - name: JOBWIRE_HEALTH_LISTEN", "            - name: JOBWIRE_TLS_CLIENT_CA\n              value: /etc/jobwire/tls/tls.crt\n            - name: JOBWIRE_HEALTH_LISTEN", "the brokers require client certificates (JOBWIRE_TLS_CLIENT_CA), but JOBWIRE_DASHBOARD_BROKER_CERT is not set"},
		{"client certificate without key", caEnv, caEnv + "            - name: JOBWIRE_DASHBOARD_BROKER_CERT\n              value: /etc/jobwire-dashboard/broker-ca/ca.crt\n", "JOBWIRE_DASHBOARD_BROKER_CERT and JOBWIRE_DASHBOARD_BROKER_KEY come together"},
		{"client certificate to brokers that ask for none", caEnv, caEnv + "            - name: JOBWIRE_DASHBOARD_BROKER_CERT\n              value: /etc/jobwire-dashboard/broker-ca/ca.crt\n            - name: JOBWIRE_DASHBOARD_BROKER_KEY\n              value: /etc/jobwire-dashboard/broker-ca/ca.crt\n", "the brokers do not ask for client certificates (JOBWIRE_TLS_CLIENT_CA), but JOBWIRE_DASHBOARD_BROKER_CERT is set"},
		{"two replicas", "  replicas: 1\n  revisionHistoryLimit: 5\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: jobwire\n      app.kubernetes.io/instance: jobwire\n      app.kubernetes.io/component: dashboard", "  replicas: 2\n  revisionHistoryLimit: 5\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: jobwire\n      app.kubernetes.io/instance: jobwire\n      app.kubernetes.io/component: dashboard", "2 replicas without JOBWIRE_DASHBOARD_SESSION_KEY_FILE; sessions and CSRF tokens live in one process's memory"},
		{"NetworkPolicy without the dashboard's rule", npRule, "whatever grpcFrom says.\n    - ports:\n        - port: metrics", "no ingress rule admits the dashboard's pods to the brokers' gRPC port 50051"},
		{"NetworkPolicy rule for other pods", "              app.kubernetes.io/component: dashboard\n  egress:", "              app.kubernetes.io/component: worker\n  egress:", "no ingress rule admits the dashboard's pods"},
		{"no Service in front of it", "    app.kubernetes.io/component: dashboard\n  ports:", "    app.kubernetes.io/component: dashbord\n  ports:", "no Service selects the dashboard"},
		{"Ingress to a Service not rendered", "                name: jobwire-dashboard\n                port:", "                name: jobwire-dash\n                port:", "backend Service jobwire-dash is not rendered"},
		{"Ingress to a port the Service lacks", "                  name: http", "                  name: web", "Service jobwire-dashboard has no port web"},
		{"Ingress path without type", "            pathType: Prefix\n", "", "has no pathType"},
		{"dashboard policy admits another port", "    - ports:\n        - port: http\n          protocol: TCP\n      from:\n        - namespaceSelector:", "    - ports:\n        - port: 9090\n          protocol: TCP\n      from:\n        - namespaceSelector:", "no ingress rule admits the dashboard's port 8080"},
		{"dashboard policy without DNS", "    # DNS, to resolve the broker Service's name.\n    - ports:\n        - port: 53\n          protocol: UDP\n", "    # DNS, to resolve the broker Service's name.\n    - ports:\n        - port: 5353\n          protocol: UDP\n", "restricts the dashboard's egress but allows no DNS"},
		{"dashboard policy without the brokers", "    - ports:\n        - port: 50051\n          protocol: TCP\n      to:\n        - podSelector:\n            matchLabels:\n              app.kubernetes.io/name: jobwire\n              app.kubernetes.io/instance: jobwire\n              app.kubernetes.io/component: broker", "    - ports:\n        - port: 50051\n          protocol: TCP\n      to:\n        - podSelector:\n            matchLabels:\n              app.kubernetes.io/name: jobwire\n              app.kubernetes.io/instance: jobwire\n              app.kubernetes.io/component: redis", "no rule allows the broker pods' gRPC port 50051"},
		{"Ingress ends TLS, no public origin", "            - name: JOBWIRE_DASHBOARD_PUBLIC_ORIGIN\n              value: \"https://jobwire.example.com\"\n", "", "Ingress jobwire-dashboard ends TLS in front of the plain-HTTP dashboard, but JOBWIRE_DASHBOARD_PUBLIC_ORIGIN is \"\""},
		{"Ingress ends TLS, http public origin", `value: "https://jobwire.example.com"`, `value: "http://jobwire.example.com"`, `JOBWIRE_DASHBOARD_PUBLIC_ORIGIN is "http://jobwire.example.com", not https://`},
		{"public origin with a path", `value: "https://jobwire.example.com"`, `value: "https://jobwire.example.com/ui"`, "is not scheme://host[:port]"},
	}
	runBroken(t, "good-dashboard.yaml", dashboardExternal, cases)
}

// TestDashboardValuesHonoured: CheckDashboardValues fails a render that
// does not follow the values' dashboard settings.
func TestDashboardValuesHonoured(t *testing.T) {
	const on = "tls:\n  existingSecret: jobwire-tls\nauth:\n  existingSecret: jobwire-tokens\ndashboard:\n  enabled: true\n  ingress:\n    enabled: true\n    host: jobwire.example.com\n    tls:\n      - secretName: jobwire-dashboard-ingress-tls\n"
	for _, tc := range []struct {
		fixture, values, want string
	}{
		{"good-dashboard.yaml", on, ""},
		{"good.yaml", "", ""},
		{"good-dashboard.yaml", "", "values dashboard.enabled is false, but the render has a dashboard Deployment"},
		{"good.yaml", "dashboard:\n  enabled: true\n", "values dashboard.enabled is true, but no Deployment runs a dashboard container"},
		{"good-dashboard.yaml", strings.Replace(on, "dashboard:\n", "dashboard:\n  readOnly: true\n", 1), `JOBWIRE_DASHBOARD_READ_ONLY "false", but values dashboard.readOnly is true`},
		{"good-dashboard.yaml", strings.Replace(on, "dashboard:\n", "dashboard:\n  requireLogin: false\n", 1), `JOBWIRE_DASHBOARD_REQUIRE_LOGIN "true", but values dashboard.requireLogin false`},
		{"good-dashboard.yaml", strings.Replace(on, "auth:\n  existingSecret: jobwire-tokens\n", "", 1), "JOBWIRE_DASHBOARD_REQUIRE_LOGIN \"true\", but values dashboard.requireLogin <nil>"},
		{"good-dashboard.yaml", strings.Replace(on, "    enabled: true\n", "    enabled: false\n", 1), "values dashboard.ingress.enabled is false: want 0 Ingress, got 1"},
		{"good-dashboard.yaml", strings.Replace(on, "dashboard:\n", "dashboard:\n  image:\n    repository: jobwire-dashboard\n    digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", 1), "but values dashboard.image.digest is"},
		{"good-dashboard.yaml", strings.Replace(on, "dashboard:\n", "dashboard:\n  tls:\n    existingSecret: dash-tls\n", 1), `does not follow values dashboard.tls.existingSecret "dash-tls"`},
		{"good-dashboard.yaml", strings.Replace(on, "dashboard:\n", "dashboard:\n  brokerCA:\n    existingSecret: other-ca\n", 1), `must come from Secret "other-ca"`},
		{"good-dashboard.yaml", strings.Replace(on, "tls:\n  existingSecret: jobwire-tls\n", "", 1), `must come from Secret "" exactly when values tls.existingSecret is set ("")`},
		{"good-dashboard.yaml", strings.Replace(on, "dashboard:\n", "dashboard:\n  broker: other:50051\n", 1), `but values dashboard.broker is "other:50051"`},
		{"good-dashboard.yaml", strings.Replace(on, "  existingSecret: jobwire-tls\n", "  existingSecret: jobwire-tls\n  clientAuth: true\n", 1), "the client certificate (JOBWIRE_DASHBOARD_BROKER_CERT false) must come from Secret \"\" exactly when values tls.clientAuth is on (true)"},
		{"good-dashboard.yaml", strings.Replace(on, "    tls:\n      - secretName: jobwire-dashboard-ingress-tls\n", "", 1), `JOBWIRE_DASHBOARD_PUBLIC_ORIGIN "https://jobwire.example.com", but values dashboard.publicOrigin "" and dashboard.ingress (host "jobwire.example.com", tls false) want "http://jobwire.example.com"`},
		{"good-dashboard.yaml", strings.Replace(on, "dashboard:\n", "dashboard:\n  publicOrigin: https://ops.example.com\n", 1), `want "https://ops.example.com"`},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.fixture))
		if err != nil {
			t.Fatal(err)
		}
		objs, errs := Decode(tc.fixture, data)
		if len(errs) > 0 {
			t.Fatalf("%s:%s", tc.fixture, joinErrs(errs))
		}
		got := joinErrs(CheckDashboardValues(objs, []byte(tc.values)))
		if tc.want == "" && got != "" {
			t.Errorf("%s with values %q:%s", tc.fixture, tc.values, got)
		}
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s with values %q: want an error containing %q, got:%s", tc.fixture, tc.values, tc.want, got)
		}
	}
}
