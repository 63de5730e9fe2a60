package jobwire_test

// Bearer tokens and TLS / mutual TLS (docs/security.md) against real brokers
// started with --tls_cert, --tls_key, --tls_client_ca and --auth_tokens_file,
// with a throwaway PKI made by the openssl CLI (as tests/test_pki.cc does).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

// The tokens of the brokers started here, and the names the broker knows
// them by.
const (
	producerToken = "go-producer-token-8c41d2e07b"   // "billing-api": enqueue billing.*
	workerToken   = "go-worker-token-f39a0c5d11"     // "billing-worker": claim billing.*
	unknownToken  = "go-unknown-token-77ab30e9c2d4f" // in no tokens file
)

// pkiScript, shared by every language's TLS tests, makes ca.pem,
// server.{pem,key} (SAN IP:127.0.0.1, DNS:localhost), client.{pem,key} (the
// same CA), other-ca.pem and other-client.{pem,key} in the directory it is
// given.
const pkiScript = "../../tests/make_test_pki.sh"

// testPKI is a directory of PEM files made by pkiScript.
type testPKI struct{ dir string }

func (p *testPKI) path(name string) string { return filepath.Join(p.dir, name) }

func (p *testPKI) pem(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(p.path(name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

var (
	pkiOnce sync.Once
	pkiDir  string
	pkiErr  error
)

// getPKI makes the PKI once per test binary (in the suite's temp dir).
func getPKI(t *testing.T) *testPKI {
	t.Helper()
	pkiOnce.Do(func() {
		dir := filepath.Join(tmpDir, "pki")
		if pkiErr = os.MkdirAll(dir, 0o700); pkiErr != nil {
			return
		}
		cmd := exec.Command("sh", pkiScript, dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			pkiErr = fmt.Errorf("openssl: %v\n%s", err, out)
			return
		}
		pkiDir = dir
	})
	if pkiErr != nil {
		t.Fatalf("make test PKI: %v", pkiErr)
	}
	return &testPKI{dir: pkiDir}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// writeTokensFile writes the --auth_tokens_file of the brokers started here.
func writeTokensFile(t *testing.T) string {
	t.Helper()
	type entry struct {
		Name    string   `json:"name"`
		SHA256  string   `json:"sha256"`
		Enqueue []string `json:"enqueue,omitempty"`
		Claim   []string `json:"claim,omitempty"`
	}
	doc := map[string][]entry{"tokens": {
		{Name: "billing-api", SHA256: sha256Hex(producerToken), Enqueue: []string{"billing.*"}},
		{Name: "billing-worker", SHA256: sha256Hex(workerToken), Claim: []string{"billing.*"}},
	}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startSecureBroker starts a broker of its own (stopped at the end of the
// test) that requires the tokens of writeTokensFile; with tlsMode "mtls" it
// serves TLS and requires a client certificate signed by the test CA, with
// "" it is plaintext.
func startSecureBroker(t *testing.T, tlsMode string) string {
	t.Helper()
	flags := append([]string{"--auth_tokens_file=" + writeTokensFile(t)}, brokerFlags...)
	if tlsMode == "mtls" {
		p := getPKI(t)
		flags = append(flags, "--tls_cert="+p.path("server.pem"), "--tls_key="+p.path("server.key"),
			"--tls_client_ca="+p.path("ca.pem"))
	}
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, flags...)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { b.Stop(5 * time.Second) })
	return b.Addr()
}

// mtlsOptions are the options of a client presenting the test client
// certificate, all given as file paths.
func mtlsOptions(t *testing.T, token string) []jobwire.Option {
	p := getPKI(t)
	return []jobwire.Option{
		jobwire.WithToken(token),
		jobwire.WithTLSRootCA(p.path("ca.pem")),
		jobwire.WithTLSClientCert(p.path("client.pem"), p.path("client.key")),
	}
}

// billingQueue is a queue of its own for one test that the test tokens cover.
func billingQueue(t *testing.T) string { return "billing." + queueName(t) }

// logBuffer collects a logger's records as JSON lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns the records whose message is msg.
func (l *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// assertNoSecret fails when text contains one of the test tokens.
func assertNoSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, tok := range []string{producerToken, workerToken, unknownToken} {
		if strings.Contains(text, tok) {
			t.Errorf("%s contains a token: %s", what, text)
		}
	}
}

func expectCode(t *testing.T, what string, err error, code codes.Code) *jobwire.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, jobwire.CodeName(code))
	}
	je := asError(t, err)
	if je.Code != code || status.Code(err) != code {
		t.Fatalf("%s: %v, want %s", what, err, jobwire.CodeName(code))
	}
	assertNoSecret(t, what+" error", err.Error())
	return je
}

// A producer and a Worker over mutual TLS, each with its own token: the job
// is claimed, handled and acked end to end. The producer's TLS files are
// paths, the worker's PEM text.
func TestSecurityMutualTLSWithTokensEndToEnd(t *testing.T) {
	t.Parallel()
	addr := startSecureBroker(t, "mtls")
	p := getPKI(t)
	q := billingQueue(t)
	c := newClient(t, addr, mtlsOptions(t, producerToken)...)
	id := mustEnqueue(t, c, q, "invoice", map[string]int{"n": 21})

	logs := &logBuffer{}
	rw := startWorker(t, addr, []string{q}, map[string]jobwire.Handler{
		"invoice": func(ctx context.Context, job *jobwire.Job) (any, error) {
			var in struct{ N int }
			if err := job.JSON(&in); err != nil {
				return nil, jobwire.NonRetryable(err)
			}
			return map[string]int{"doubled": in.N * 2}, nil
		},
	},
		jobwire.WithLogger(logs.logger()),
		jobwire.WithToken(workerToken),
		jobwire.WithTLSRootCA(p.pem(t, "ca.pem")),
		jobwire.WithTLSClientCert(p.pem(t, "client.pem"), p.pem(t, "client.key")))

	j := waitState(t, c, q, id, jobwire.StateCompleted, 15*time.Second)
	if string(j.GetResult()) != `{"doubled":42}` || j.GetAttempts() != 1 {
		t.Errorf("completed job result %q attempts %d", j.GetResult(), j.GetAttempts())
	}
	waitFor(t, 5*time.Second, "ack_ok outcome", func() bool {
		o := rw.out.forJob(id)
		return len(o) == 1 && o[0].Kind == jobwire.OutcomeAckOK
	})
	start := logs.records(t, "jobwire worker starting")
	if len(start) != 1 || start[0]["tls"] != true || start[0]["token"] != true {
		t.Errorf("start records = %v, want one with tls=true token=true", start)
	}
	assertNoSecret(t, "worker log", logs.String())
}

// No token, or a token the broker does not know: UNAUTHENTICATED, as a
// *jobwire.Error, and nothing stored.
func TestSecurityMissingOrUnknownTokenIsUnauthenticated(t *testing.T) {
	t.Setenv("JOBWIRE_TOKEN", "") // not t.Parallel: the env default must be empty
	addr := startSecureBroker(t, "mtls")
	q := billingQueue(t)
	ctx := context.Background()

	none := newClient(t, addr, mtlsOptions(t, "")...)
	_, err := none.Enqueue(ctx, q, "t", nil)
	expectCode(t, "Enqueue without a token", err, codes.Unauthenticated)

	unknown := newClient(t, addr, mtlsOptions(t, unknownToken)...)
	_, err = unknown.Enqueue(ctx, q, "t", nil)
	expectCode(t, "Enqueue with an unknown token", err, codes.Unauthenticated)
	_, err = unknown.GetJob(ctx, q, "missing")
	expectCode(t, "GetJob with an unknown token", err, codes.Unauthenticated)

	// The same connection with the right token gets through to the broker.
	good := newClient(t, addr, mtlsOptions(t, producerToken)...)
	_, err = good.GetJob(ctx, q, "missing")
	expectCode(t, "GetJob of a missing job with the producer token", err, codes.NotFound)
}

// A valid token on a queue it does not cover: PERMISSION_DENIED with the
// broker's message unchanged.
func TestSecurityQueueNotAllowedIsPermissionDenied(t *testing.T) {
	t.Parallel()
	addr := startSecureBroker(t, "mtls")
	ctx := context.Background()
	c := newClient(t, addr, mtlsOptions(t, producerToken)...)

	_, err := c.Enqueue(ctx, "emails", "send", nil)
	je := expectCode(t, "Enqueue to emails", err, codes.PermissionDenied)
	if want := `token "billing-api" may not enqueue to queue "emails"`; je.Message != want {
		t.Errorf("message = %q, want %q", je.Message, want)
	}
	if want := `jobwire: PERMISSION_DENIED: token "billing-api" may not enqueue to queue "emails"`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}

	// The worker's token may claim but not enqueue.
	w := newClient(t, addr, mtlsOptions(t, workerToken)...)
	q := billingQueue(t)
	_, err = w.Enqueue(ctx, q, "t", nil)
	je = expectCode(t, "Enqueue with the worker token", err, codes.PermissionDenied)
	if want := `token "billing-worker" may not enqueue to queue "` + q + `"`; je.Message != want {
		t.Errorf("message = %q, want %q", je.Message, want)
	}
}

// A Worker whose token may not claim its queue: every Claim is refused with
// PERMISSION_DENIED, which the worker logs (code and the broker's message)
// and retries with backoff, as it does for every Claim error but
// INVALID_ARGUMENT; Run keeps running, nothing is claimed, and Stop ends it
// with nil.
func TestSecurityWorkerWithoutClaimPermissionLogsAndRetries(t *testing.T) {
	t.Parallel()
	addr := startSecureBroker(t, "mtls")
	p := getPKI(t)
	q := billingQueue(t)
	c := newClient(t, addr, mtlsOptions(t, producerToken)...)
	id := mustEnqueue(t, c, q, "t", nil)

	logs := &logBuffer{}
	handled := make(chan struct{}, 1)
	rw := startWorker(t, addr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
			handled <- struct{}{}
			return nil, nil
		},
	},
		jobwire.WithLogger(logs.logger()),
		jobwire.WithToken(producerToken), // enqueue only
		jobwire.WithTLSRootCA(p.path("ca.pem")),
		jobwire.WithTLSClientCert(p.path("client.pem"), p.path("client.key")))

	const msg = "jobwire worker: Claim stream failed, reopening"
	waitFor(t, 10*time.Second, "two refused Claim streams logged", func() bool {
		return len(logs.records(t, msg)) >= 2
	})
	for _, rec := range logs.records(t, msg) {
		want := `token "billing-api" may not claim from queue "` + q + `"`
		if rec["level"] != "WARN" || rec["code"] != "PERMISSION_DENIED" || rec["error"] != want {
			t.Errorf("log record %v, want WARN code=PERMISSION_DENIED error=%q", rec, want)
		}
	}
	select {
	case err := <-rw.runErr:
		t.Fatalf("Run returned %v while the Claim is refused, want it to keep retrying", err)
	case <-handled:
		t.Fatal("a handler ran although the token may not claim")
	default:
	}
	j, err := c.GetJob(context.Background(), q, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if j.GetState() != jobwire.StatePending || j.GetAttempts() != 0 {
		t.Errorf("job state %v attempts %d, want PENDING and 0", j.GetState(), j.GetAttempts())
	}
	if n := len(rw.out.forJob(id)); n != 0 {
		t.Errorf("%d outcomes for the job, want none", n)
	}
	assertNoSecret(t, "worker log", logs.String())
	// The cleanup of startWorker stops the worker and checks Run returns nil.
}

// Against a broker requiring client certificates, a TLS client without one,
// with one from another CA, a client trusting only the system roots, and a
// plaintext client all fail with UNAVAILABLE (handshake).
func TestSecurityTLSHandshakeFailuresAreUnavailable(t *testing.T) {
	t.Parallel()
	addr := startSecureBroker(t, "mtls")
	p := getPKI(t)
	q := billingQueue(t)
	cases := map[string][]jobwire.Option{
		"no client certificate": {jobwire.WithTLSRootCA(p.path("ca.pem"))},
		"client certificate of another CA": {jobwire.WithTLSRootCA(p.path("ca.pem")),
			jobwire.WithTLSClientCert(p.path("other-client.pem"), p.path("other-client.key"))},
		"system roots": {jobwire.WithTLS(),
			jobwire.WithTLSClientCert(p.path("client.pem"), p.path("client.key"))},
		"plaintext": {},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			opts = append(opts, jobwire.WithToken(producerToken), jobwire.WithTimeout(5*time.Second))
			c := newClient(t, addr, opts...)
			start := time.Now()
			_, err := c.Enqueue(context.Background(), q, "t", nil)
			expectCode(t, "Enqueue", err, codes.Unavailable)
			t.Logf("error: %v", err)
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("failed after %s, want a fast handshake failure", d)
			}
		})
	}
}

// $JOBWIRE_TOKEN is the token when none is given (for Dial and NewWorker), an
// explicit token wins over it, and a token works over plaintext.
func TestSecurityTokenFromEnvironmentOverPlaintext(t *testing.T) {
	addr := startSecureBroker(t, "") // plaintext + tokens
	ctx := context.Background()
	q := billingQueue(t)

	t.Setenv("JOBWIRE_TOKEN", producerToken)
	fromEnv := newClient(t, addr)
	id := mustEnqueue(t, fromEnv, q, "t", []byte("x"))

	explicit := newClient(t, addr, jobwire.WithToken(workerToken))
	_, err := explicit.Enqueue(ctx, q, "t", nil)
	je := expectCode(t, "Enqueue with an explicit worker token", err, codes.PermissionDenied)
	if !strings.Contains(je.Message, `token "billing-worker"`) {
		t.Errorf("message %q does not name billing-worker: the explicit token was not used", je.Message)
	}

	t.Setenv("JOBWIRE_TOKEN", workerToken)
	startWorker(t, addr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) { return []byte("done"), nil },
	})
	j := waitState(t, fromEnv, q, id, jobwire.StateCompleted, 15*time.Second)
	if string(j.GetResult()) != "done" {
		t.Errorf("result %q, want done", j.GetResult())
	}

	t.Setenv("JOBWIRE_TOKEN", "")
	none := newClient(t, addr)
	_, err = none.Enqueue(ctx, q, "t", nil)
	expectCode(t, "Enqueue with JOBWIRE_TOKEN empty", err, codes.Unauthenticated)
}

// Each TLS setting may be PEM text or the path of a PEM file, in any mix.
func TestSecurityPEMTextAndPathBothWork(t *testing.T) {
	t.Parallel()
	addr := startSecureBroker(t, "mtls")
	p := getPKI(t)
	q := billingQueue(t)
	text := func(name string) string { return p.pem(t, name) }
	cases := []struct{ name, ca, cert, key string }{
		{"paths", p.path("ca.pem"), p.path("client.pem"), p.path("client.key")},
		{"PEM text", text("ca.pem"), text("client.pem"), text("client.key")},
		{"mixed", text("ca.pem"), p.path("client.pem"), text("client.key")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, addr, jobwire.WithToken(producerToken),
				jobwire.WithTLSRootCA(tc.ca), jobwire.WithTLSClientCert(tc.cert, tc.key))
			id := mustEnqueue(t, c, q, "t", tc.name)
			j, err := c.GetJob(context.Background(), q, id)
			if err != nil {
				t.Fatalf("GetJob: %v", err)
			}
			if want, _ := json.Marshal(tc.name); string(j.GetPayload()) != string(want) {
				t.Errorf("payload %q, want %s", j.GetPayload(), want)
			}
		})
	}
}

// Bad settings are errors of Dial and NewWorker, naming the file but never
// quoting PEM text or the token.
func TestSecurityConfigErrors(t *testing.T) {
	t.Parallel()
	p := getPKI(t)
	missing := filepath.Join(t.TempDir(), "nope", "ca.pem")
	keyText := p.pem(t, "client.key")

	dialErr := func(opts ...jobwire.Option) error {
		c, err := jobwire.Dial("127.0.0.1:1", opts...)
		if err == nil {
			c.Close()
			t.Fatalf("Dial succeeded, want an error")
		}
		return err
	}
	expect := func(what string, err error, parts ...string) {
		t.Helper()
		for _, part := range parts {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: error %q does not contain %q", what, err, part)
			}
		}
		if strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: error quotes PEM text: %q", what, err)
		}
		assertNoSecret(t, what, err.Error())
	}

	expect("unreadable root CA", dialErr(jobwire.WithTLSRootCA(missing)),
		"WithTLSRootCA", missing, "no such file")
	expect("root CA without a certificate", dialErr(jobwire.WithTLSRootCA(p.path("client.key"))),
		"WithTLSRootCA", "no PEM certificate")
	expect("certificate without key", dialErr(jobwire.WithTLSClientCert(p.path("client.pem"), "")),
		"WithTLSClientCert: give both the certificate and the key")
	expect("key of another certificate",
		dialErr(jobwire.WithTLSClientCert(p.path("client.pem"), p.pem(t, "server.key"))),
		"WithTLSClientCert: certificate (file "+p.path("client.pem")+") / key (PEM text)")
	expect("token with a newline", dialErr(jobwire.WithToken(producerToken+"\n")),
		"token", "not printable ASCII")

	_, err := jobwire.NewWorker("127.0.0.1:1", []string{"q"}, jobwire.WithTLSClientCert(missing, keyText))
	if err == nil {
		t.Fatal("NewWorker with an unreadable certificate succeeded")
	}
	expect("worker with an unreadable certificate", err, "WithTLSClientCert: certificate", missing)
	_, err = jobwire.NewWorker("127.0.0.1:1", []string{"q"}, jobwire.WithToken("a b"))
	if err == nil {
		t.Fatal("NewWorker with a token holding a space succeeded")
	}
	expect("worker token with a space", err, "not printable ASCII")
}
