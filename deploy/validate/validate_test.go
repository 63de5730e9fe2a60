package validate

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

func joinErrs(errs []error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n  - ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// validate decodes and checks a manifest, its alert rules against the
// metrics docs included.
func validate(source string, data []byte, external map[string]bool) []error {
	objs, errs := Decode(source, data)
	errs = append(errs, Check(objs, external)...)
	cat, err := metricsCatalog()
	if err != nil {
		return append(errs, err)
	}
	return append(errs, CheckRuleMetrics(objs, cat)...)
}

// metricsDoc is docs/operations.md, whose metrics table says which metrics
// (and labels) the broker has.
func metricsDoc() string {
	if p := os.Getenv("JOBWIRE_METRICS_DOC"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "docs", "operations.md")
}

var metricsCatalog = sync.OnceValues(func() (Catalog, error) {
	md, err := os.ReadFile(metricsDoc())
	if err != nil {
		return nil, err
	}
	return ParseMetricsDoc(md)
})

// fixtures are the known-good manifests under testdata/ with the Secrets
// their values name outside the chart.
var fixtures = []struct {
	file     string
	external map[string]bool
}{
	{"good.yaml", map[string]bool{}},
	{"good-tls.yaml", map[string]bool{"jobwire-redis": true, "jobwire-tls": true, "jobwire-tokens": true}},
	{"good-monitoring.yaml", map[string]bool{}},
	{"good-podmonitor.yaml", map[string]bool{"jobwire-redis": true, "jobwire-tls": true}},
	{"good-networkpolicy.yaml", map[string]bool{"jobwire-tls": true}},
}

// valuesDir is deploy/helm/jobwire/ci (JOBWIRE_VALUES_DIR from deploy/test.sh).
func valuesDir() string {
	if d := os.Getenv("JOBWIRE_VALUES_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "helm", "jobwire", "ci")
}

// externalSecrets reads the chart's values.yaml and the values file a render
// came from (<name>.yaml from ci/<name>-values.yaml) and returns the Secrets
// they name outside the chart, and the values file's content.
func externalSecrets(t *testing.T, rendered string) (map[string]bool, []byte) {
	dir := valuesDir()
	name := strings.TrimSuffix(filepath.Base(rendered), ".yaml")
	ci, err := os.ReadFile(filepath.Join(dir, name+"-values.yaml"))
	if err != nil {
		t.Fatalf("values file of %s: %v", filepath.Base(rendered), err)
	}
	defaults, err := os.ReadFile(filepath.Join(dir, "..", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, data := range [][]byte{defaults, ci} {
		m, err := ValuesSecrets(data)
		if err != nil {
			t.Fatal(err)
		}
		for k := range m {
			out[k] = true
		}
	}
	return out, ci
}

// TestRenderedManifests validates every file deploy/test.sh rendered with
// `helm template` (one per values file under deploy/helm/jobwire/ci/).
func TestRenderedManifests(t *testing.T) {
	dir := os.Getenv("JOBWIRE_RENDERED_DIR")
	if dir == "" {
		t.Skip("JOBWIRE_RENDERED_DIR is not set; deploy/test.sh renders the chart and sets it")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rendered manifests in %s (%v)", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		f := f
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			external, values := externalSecrets(t, f)
			objs, errs := Decode(filepath.Base(f), data)
			errs = append(errs, Check(objs, external)...)
			errs = append(errs, CheckSecurityValues(objs, values)...)
			errs = append(errs, CheckImageValues(objs, values)...)
			errs = append(errs, CheckDashboardValues(objs, values)...)
			cat, err := metricsCatalog()
			if err != nil {
				t.Fatal(err)
			}
			errs = append(errs, CheckRuleMetrics(objs, cat)...)
			errs = append(errs, checkDashboardConfigMaps(t, objs)...)
			if len(errs) > 0 {
				t.Fatalf("%d problem(s):%s", len(errs), joinErrs(errs))
			}
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.Kind]++
			}
			t.Logf("%d objects OK: %v", len(objs), kinds)
		})
	}
}

func TestGoodFixturePasses(t *testing.T) {
	for _, fx := range fixtures {
		data, err := os.ReadFile(filepath.Join("testdata", fx.file))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(fx.file, data, fx.external); len(errs) > 0 {
			t.Errorf("the known-good fixture %s fails:%s", fx.file, joinErrs(errs))
		}
	}
}

func TestValuesSecrets(t *testing.T) {
	got, err := ValuesSecrets([]byte("redis:\n  existingSecret: r\n  auth:\n    password: x\ntls:\n  existingSecret: \"\"\nauth:\n  existingSecret: a\nimagePullSecrets:\n  - name: regcred\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got["r"] || !got["a"] || !got["regcred"] {
		t.Fatalf("ValuesSecrets = %v, want r, a, regcred", got)
	}
}

type brokenCase struct {
	name, old, new, want string
}

// runBroken breaks a fixture once per case and expects the complaint.
func runBroken(t *testing.T, fixture string, external map[string]bool, cases []brokenCase) {
	good, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(good), tc.old) {
				t.Fatalf("%s no longer contains %q; update the case", fixture, tc.old)
			}
			broken := strings.Replace(string(good), tc.old, tc.new, 1)
			errs := validate("broken.yaml", []byte(broken), external)
			if len(errs) == 0 {
				t.Fatalf("validator accepted a manifest with %s", tc.name)
			}
			if !strings.Contains(joinErrs(errs), tc.want) {
				t.Fatalf("want an error containing %q, got:%s", tc.want, joinErrs(errs))
			}
		})
	}
}

// TestRejectsBrokenManifests proves the validator can fail: each case breaks
// the known-good fixture in one place and expects a specific complaint.
func TestRejectsBrokenManifests(t *testing.T) {
	cases := []brokenCase{
		{"misspelled field", "containerPort: 50051", "containrPort: 50051", `unknown field "spec.template.spec.containers[0].ports[0].containrPort"`},
		{"wrong-case field", "containerPort: 50051", "containerport: 50051", `unknown field`},
		{"field at the wrong level", "      terminationGracePeriodSeconds: 40", "      terminationGracePeriod: 40", `unknown field "spec.template.spec.terminationGracePeriod"`},
		{"duplicate key", "  type: ClusterIP\n", "  type: ClusterIP\n  type: NodePort\n", `key "type" already set`},
		{"unknown kind", "kind: PodDisruptionBudget", "kind: PodDisruptionBudgett", "unexpected apiVersion/kind"},
		{"selector does not match template", "      app.kubernetes.io/component: broker\n  strategy:", "      app.kubernetes.io/component: brokr\n  strategy:", "does not match the pod template labels"},
		{"service selects nothing", "    app.kubernetes.io/component: broker\n  ports:", "    app.kubernetes.io/component: worker\n  ports:", "matches 0 workloads"},
		{"service targetPort unknown", "      targetPort: grpc", "      targetPort: grcp", "targetPort grcp is not a container port"},
		{"grpc probe port", "            grpc:\n              port: 50051\n            failureThreshold: 2", "            grpc:\n              port: 50052\n            failureThreshold: 2", "grpc probe port 50052 is not a container port"},
		{"liveness follows redis", "              service: jobwire.liveness\n", "", `livenessProbe asks health service "", which follows Redis`},
		{"readiness asks liveness", "              port: 50051\n            failureThreshold: 2", "              port: 50051\n              service: jobwire.liveness\n            failureThreshold: 2", `readinessProbe asks health service "jobwire.liveness"`},
		{"grace period too short", "terminationGracePeriodSeconds: 40", "terminationGracePeriodSeconds: 30", "is not more than preStop 5 s + shutdown grace 25000 ms"},
		{"longer drain without longer grace", "value: \"25000\"", "value: \"36000\"", "shutdown grace 36000 ms"},
		{"no preStop", "          lifecycle:\n            preStop:\n              sleep:\n                seconds: 5\n", "", "no preStop hook"},
		{"headless is not headless", "  clusterIP: None\n  publishNotReadyAddresses: false", "  publishNotReadyAddresses: false", "no headless Service"},
		{"root user", "            runAsUser: 10001", "            runAsUser: 0", "runAsUser is unset or 0"},
		{"writable root fs", "readOnlyRootFilesystem: true\n            runAsGroup: 10001", "readOnlyRootFilesystem: false\n            runAsGroup: 10001", "readOnlyRootFilesystem is not true"},
		{"privilege escalation", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation is not false"},
		{"capabilities kept", "              - ALL", "              - NET_RAW", "capabilities do not drop ALL"},
		{"seccomp unconfined", "              type: RuntimeDefault\n          # Secret volumes are mounted", "              type: Unconfined\n          # Secret volumes are mounted", "seccompProfile is not RuntimeDefault"},
		{"pdb selects nothing", "      app.kubernetes.io/component: broker\n---\n# Source: jobwire/templates/serviceaccount.yaml", "      app.kubernetes.io/component: none\n---\n# Source: jobwire/templates/serviceaccount.yaml", "PodDisruptionBudget jobwire: selector matches 0"},
		{"hpa targets another deployment", "    kind: Deployment\n    name: jobwire", "    kind: Deployment\n    name: jobwire-old", "is not the rendered Deployment"},
		{"misspelled env", "name: JOBWIRE_KEY_PREFIX", "name: JOBWIRE_KEY_PREFX", "JOBWIRE_KEY_PREFX is not a broker flag"},
		{"secret key missing", "key: redis-url", "key: redis_url", `key "redis_url" that Secret jobwire-redis-url does not have`},
		{"scrape port wrong", `prometheus.io/port: "9464"`, `prometheus.io/port: "9090"`, "is not the metrics port 9464"},
		{"redis may evict", `"--maxmemory-policy"
            - "noeviction"`, `"--maxmemory-policy"
            - "allkeys-lru"`, "--maxmemory-policy noeviction"},
		{"redis without PVC", "  volumeClaimTemplates:", "  volumeClaimTemplatesX:", "unknown field"},
		{"mount without volume", "      volumes:\n        - name: tmp", "      volumes:\n        - name: scratch", `volumeMount "tmp" has no volume`},
		{"secret neither rendered nor in values", "name: jobwire-redis-url\n                  key: redis-url", "name: jobwire-redis-uri\n                  key: redis-url", `Secret "jobwire-redis-uri", which is neither rendered nor given in values`},
		{"tls cert without key", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"\n            - name: JOBWIRE_TLS_CERT\n              value: /tmp/tls.crt", "JOBWIRE_TLS_CERT and JOBWIRE_TLS_KEY come together"},
		{"redis tls cert without key", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"\n            - name: JOBWIRE_REDIS_TLS_CERT\n              value: /tmp/tls.crt", "JOBWIRE_REDIS_TLS_CERT and JOBWIRE_REDIS_TLS_KEY come together"},
		{"redis tls verification off", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"\n            - name: JOBWIRE_REDIS_TLS_INSECURE_SKIP_VERIFY\n              value: \"true\"", "turns off Redis certificate verification"},
		{"redis CA from an emptyDir", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"\n            - name: JOBWIRE_REDIS_TLS_CA\n              value: /tmp/ca.crt", "JOBWIRE_REDIS_TLS_CA /tmp/ca.crt is on volume tmp, which is not a Secret volume"},
		{"sentinel mode without the master's name", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"\n            - name: JOBWIRE_REDIS_MODE\n              value: sentinel", "JOBWIRE_REDIS_SENTINEL_MASTER must be set exactly when JOBWIRE_REDIS_MODE is sentinel"},
		{"unknown redis mode", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"", "            - name: JOBWIRE_LOG_LEVEL\n              value: \"debug\"\n            - name: JOBWIRE_REDIS_MODE\n              value: replicated", `JOBWIRE_REDIS_MODE "replicated" is not standalone, sentinel or cluster`},
		{"redis tls flag in args", "          imagePullPolicy: IfNotPresent\n", "          imagePullPolicy: IfNotPresent\n          args: [\"--redis_tls_ca=/x\"]\n", "set --redis_tls_ca through its JOBWIRE_ env variable"},
	}
	runBroken(t, "good.yaml", fixtures[0].external, cases)
}

// TestRejectsBrokenTLSManifests breaks the TLS + mutual TLS + tokens fixture.
func TestRejectsBrokenTLSManifests(t *testing.T) {
	cases := []brokenCase{
		{"readiness probe on the TLS port", "          readinessProbe:\n            grpc:\n              port: 8087", "          readinessProbe:\n            grpc:\n              port: 50051", "readinessProbe probes the TLS gRPC port 50051"},
		{"liveness probe on the TLS port", "          livenessProbe:\n            grpc:\n              port: 8087", "          livenessProbe:\n            grpc:\n              port: 50051", "livenessProbe probes the TLS gRPC port 50051"},
		{"probe on the metrics port", "          readinessProbe:\n            grpc:\n              port: 8087", "          readinessProbe:\n            grpc:\n              port: 9464", "probes port 9464, not the health port 8087"},
		{"no health listener", "            - name: JOBWIRE_HEALTH_LISTEN\n              value: \"0.0.0.0:8087\"\n", "", "no JOBWIRE_HEALTH_LISTEN"},
		{"health port not declared", "            - name: health\n              containerPort: 8087\n              protocol: TCP\n", "", "grpc probe port 8087 is not a container port"},
		{"health port is the grpc port", `value: "0.0.0.0:8087"`, `value: "0.0.0.0:50051"`, "health listen port 50051 is also the gRPC or metrics port"},
		{"key without cert", "            - name: JOBWIRE_TLS_CERT\n              value: /etc/jobwire/tls/tls.crt\n", "", "JOBWIRE_TLS_CERT and JOBWIRE_TLS_KEY come together"},
		{"tls mount without volume", "        - name: tls\n          secret:", "        - name: certs\n          secret:", `volumeMount "tls" has no volume`},
		{"auth mount without volume", "        - name: auth\n          secret:", "        - name: tokens\n          secret:", `volumeMount "auth" has no volume`},
		{"tokens file not mounted", "              mountPath: /etc/jobwire/auth", "              mountPath: /etc/jobwire/tokens", "JOBWIRE_AUTH_TOKENS_FILE /etc/jobwire/auth/tokens.json is on no volumeMount"},
		{"tokens item path differs", "                path: tokens.json", "                path: tokens", `Secret volume auth has no item with path "tokens.json"`},
		{"client CA not in the volume", "              - key: ca.crt\n                path: ca.crt\n", "", `JOBWIRE_TLS_CLIENT_CA /etc/jobwire/tls/ca.crt: Secret volume tls has no item with path "ca.crt"`},
		{"cert from an emptyDir", "              value: /etc/jobwire/tls/tls.crt", "              value: /tmp/tls.crt", "JOBWIRE_TLS_CERT /tmp/tls.crt is on volume tmp, which is not a Secret volume"},
		{"relative path", "              value: /etc/jobwire/tls/tls.key", "              value: tls.key", "JOBWIRE_TLS_KEY must be a literal absolute path"},
		{"secret mount writable", "              mountPath: /etc/jobwire/tls\n              readOnly: true", "              mountPath: /etc/jobwire/tls", `volumeMount "tls" of a Secret is not readOnly`},
		{"world-readable secret", "            secretName: jobwire-tls\n            defaultMode: 0440", "            secretName: jobwire-tls\n            defaultMode: 0644", "lets every user in the pod read the Secret"},
		{"default secret mode", "            secretName: jobwire-tokens\n            defaultMode: 0440\n", "            secretName: jobwire-tokens\n", "defaultMode 0644 lets every user"},
		{"owner-only secret", "            secretName: jobwire-tls\n            defaultMode: 0440", "            secretName: jobwire-tls\n            defaultMode: 0400", "is not group-readable"},
		{"unknown tls secret", "secretName: jobwire-tls", "secretName: jobwire-tsl", `volume tls refers to Secret "jobwire-tsl", which is neither rendered nor given in values`},
		{"h2c on a TLS port", "      targetPort: grpc\n      protocol: TCP\n---", "      targetPort: grpc\n      protocol: TCP\n      appProtocol: kubernetes.io/h2c\n---", "appProtocol kubernetes.io/h2c (cleartext HTTP/2), but the broker speaks TLS"},
		{"tls flag in args", "          imagePullPolicy: IfNotPresent\n", "          imagePullPolicy: IfNotPresent\n          args: [\"--tls_cert=/x\"]\n", "set --tls_cert through its JOBWIRE_ env variable"},
	}
	runBroken(t, "good-tls.yaml", fixtures[1].external, cases)
}

func TestBuildSubdirs(t *testing.T) {
	got := buildSubdirs("add_subdirectory(proto)\nif(JOBWIRE_BUILD_TESTS)\n  add_subdirectory(tests) # t\nendif()\nadd_subdirectory(client)\nif(FOO)\n  add_subdirectory(bench)\nendif()\n")
	if strings.Join(got, ",") != "proto,client,bench" {
		t.Fatalf("buildSubdirs = %v", got)
	}
}

// TestSecurityValuesHonoured proves CheckSecurityValues fails a render that
// does not match the values' tls and auth settings.
func TestSecurityValuesHonoured(t *testing.T) {
	const tlsValues = "tls:\n  existingSecret: jobwire-tls\n  clientAuth: true\nauth:\n  existingSecret: jobwire-tokens\n"
	for _, tc := range []struct {
		fixture, values, want string
	}{
		{"good-tls.yaml", tlsValues, ""},
		{"good.yaml", "", ""},
		{"good.yaml", tlsValues, `JOBWIRE_TLS_CERT is not set, but values tls.existingSecret is "jobwire-tls"`},
		{"good-tls.yaml", "", `JOBWIRE_AUTH_TOKENS_FILE is set, but values auth.existingSecret is ""`},
		{"good-tls.yaml", strings.Replace(tlsValues, "clientAuth: true", "clientAuth: false", 1), "JOBWIRE_TLS_CLIENT_CA is set, but values tls.clientAuth is false"},
		{"good-tls.yaml", strings.Replace(tlsValues, "jobwire-tokens", "other-tokens", 1), "no volume of Secret other-tokens"},
		{"good.yaml", "redis:\n  mode: sentinel\n  sentinelMaster: m\n  sentinelPassword: pw\n", "JOBWIRE_REDIS_SENTINEL_PASSWORD must be set exactly when redis.mode is sentinel"},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.fixture))
		if err != nil {
			t.Fatal(err)
		}
		objs, errs := Decode(tc.fixture, data)
		if len(errs) > 0 {
			t.Fatalf("%s:%s", tc.fixture, joinErrs(errs))
		}
		got := joinErrs(CheckSecurityValues(objs, []byte(tc.values)))
		if tc.want == "" && got != "" {
			t.Errorf("%s with values %q:%s", tc.fixture, tc.values, got)
		}
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s with values %q: want an error containing %q, got:%s", tc.fixture, tc.values, tc.want, got)
		}
	}
}
