package validate

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
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

func validate(source string, data []byte) []error {
	objs, errs := Decode(source, data)
	return append(errs, Check(objs)...)
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
			objs, errs := Decode(filepath.Base(f), data)
			errs = append(errs, Check(objs)...)
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
	data, err := os.ReadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if errs := validate("good.yaml", data); len(errs) > 0 {
		t.Fatalf("the known-good fixture fails:%s", joinErrs(errs))
	}
}

// TestRejectsBrokenManifests proves the validator can fail: each case breaks
// the known-good fixture in one place and expects a specific complaint.
func TestRejectsBrokenManifests(t *testing.T) {
	good, err := os.ReadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"misspelled field", "containerPort: 50051", "containrPort: 50051", `unknown field "spec.template.spec.containers[0].ports[0].containrPort"`},
		{"wrong-case field", "containerPort: 50051", "containerport: 50051", `unknown field`},
		{"field at the wrong level", "      terminationGracePeriodSeconds: 40", "      terminationGracePeriod: 40", `unknown field "spec.template.spec.terminationGracePeriod"`},
		{"duplicate key", "  type: ClusterIP\n", "  type: ClusterIP\n  type: NodePort\n", `key "type" already set`},
		{"unknown kind", "kind: PodDisruptionBudget", "kind: PodDisruptionBudgett", "unexpected apiVersion/kind"},
		{"selector does not match template", "      app.kubernetes.io/component: broker\n  strategy:", "      app.kubernetes.io/component: brokr\n  strategy:", "does not match the pod template labels"},
		{"service selects nothing", "    app.kubernetes.io/component: broker\n  ports:", "    app.kubernetes.io/component: worker\n  ports:", "matches 0 workloads"},
		{"service targetPort unknown", "      targetPort: grpc", "      targetPort: grcp", "targetPort grcp is not a container port"},
		{"grpc probe port", "            grpc:\n              port: 50051", "            grpc:\n              port: 50052", "grpc probe port 50052 is not a container port"},
		{"grace period too short", "terminationGracePeriodSeconds: 40", "terminationGracePeriodSeconds: 30", "is not more than preStop 5 s + shutdown grace 25000 ms"},
		{"longer drain without longer grace", "value: \"25000\"", "value: \"36000\"", "shutdown grace 36000 ms"},
		{"no preStop", "          lifecycle:\n            preStop:\n              sleep:\n                seconds: 5\n", "", "no preStop hook"},
		{"headless is not headless", "  clusterIP: None\n  publishNotReadyAddresses: false", "  publishNotReadyAddresses: false", "no headless Service"},
		{"root user", "            runAsUser: 10001", "            runAsUser: 0", "runAsUser is unset or 0"},
		{"writable root fs", "readOnlyRootFilesystem: true\n            runAsGroup: 10001", "readOnlyRootFilesystem: false\n            runAsGroup: 10001", "readOnlyRootFilesystem is not true"},
		{"privilege escalation", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation is not false"},
		{"capabilities kept", "              - ALL", "              - NET_RAW", "capabilities do not drop ALL"},
		{"seccomp unconfined", "              type: RuntimeDefault\n          volumeMounts:\n            - name: tmp", "              type: Unconfined\n          volumeMounts:\n            - name: tmp", "seccompProfile is not RuntimeDefault"},
		{"pdb selects nothing", "      app.kubernetes.io/component: broker\n---\n# Source: jobwire/templates/serviceaccount.yaml", "      app.kubernetes.io/component: none\n---\n# Source: jobwire/templates/serviceaccount.yaml", "PodDisruptionBudget jobwire: selector matches 0"},
		{"hpa targets another deployment", "    kind: Deployment\n    name: jobwire", "    kind: Deployment\n    name: jobwire-old", "is not the rendered Deployment"},
		{"misspelled env", "name: JOBWIRE_KEY_PREFIX", "name: JOBWIRE_KEY_PREFX", "JOBWIRE_KEY_PREFX is not a broker flag"},
		{"secret key missing", "key: redis-url", "key: redis_url", `key "redis_url" that Secret jobwire-redis-url does not have`},
		{"scrape port wrong", `prometheus.io/port: "9464"`, `prometheus.io/port: "9090"`, "is not the metrics port 9464"},
		{"redis may evict", `"--maxmemory-policy"
            - "noeviction"`, `"--maxmemory-policy"
            - "allkeys-lru"`, "--maxmemory-policy noeviction"},
		{"redis without PVC", "  volumeClaimTemplates:", "  volumeClaimTemplatesX:", "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(good), tc.old) {
				t.Fatalf("fixture no longer contains %q; update the case", tc.old)
			}
			broken := strings.Replace(string(good), tc.old, tc.new, 1)
			errs := validate("broken.yaml", []byte(broken))
			if len(errs) == 0 {
				t.Fatalf("validator accepted a manifest with %s", tc.name)
			}
			if !strings.Contains(joinErrs(errs), tc.want) {
				t.Fatalf("want an error containing %q, got:%s", tc.want, joinErrs(errs))
			}
		})
	}
}

func TestBuildSubdirs(t *testing.T) {
	got := buildSubdirs("add_subdirectory(proto)\nif(JOBWIRE_BUILD_TESTS)\n  add_subdirectory(tests) # t\nendif()\nadd_subdirectory(client)\nif(FOO)\n  add_subdirectory(bench)\nendif()\n")
	if strings.Join(got, ",") != "proto,client,bench" {
		t.Fatalf("buildSubdirs = %v", got)
	}
}
