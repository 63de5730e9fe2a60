package jobwire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// tokenEnv is the environment variable read when no token is given.
const tokenEnv = "JOBWIRE_TOKEN"

// pemMarker tells PEM text from the path of a PEM file.
const pemMarker = "-----BEGIN"

// securityConfig holds the bearer token and TLS settings of a connection
// (docs/security.md). The zero value is plaintext without a token ($JOBWIRE_TOKEN
// still applies).
type securityConfig struct {
	token         string
	tls           bool
	tlsRootCA     string
	tlsClientCert string
	tlsClientKey  string
}

// WithToken sets the bearer token sent as "authorization: Bearer <token>" on
// every call (also over plaintext, for a broker on loopback). Empty (the
// default) means $JOBWIRE_TOKEN, read by Dial / NewWorker; when that is unset
// too, no token is sent. The token never appears in errors or log records.
func WithToken(token string) Option {
	return func(c *clientConfig) { c.sec.token = token }
}

// WithTLS turns TLS on. Without WithTLSRootCA the broker's certificate is
// checked against the system roots. WithTLSRootCA and WithTLSClientCert turn
// TLS on by themselves.
func WithTLS() Option {
	return func(c *clientConfig) { c.sec.tls = true }
}

// WithTLSRootCA turns TLS on and trusts only the CA certificate(s) in pem:
// PEM text (containing "-----BEGIN") or the path of a PEM file.
func WithTLSRootCA(pem string) Option {
	return func(c *clientConfig) { c.sec.tlsRootCA = pem }
}

// WithTLSClientCert turns TLS on and presents a client certificate (mutual
// TLS, for a broker started with --tls_client_ca). cert is the certificate
// chain and key its private key, each PEM text (containing "-----BEGIN") or
// the path of a PEM file; both are required.
func WithTLSClientCert(cert, key string) Option {
	return func(c *clientConfig) {
		c.sec.tlsClientCert = cert
		c.sec.tlsClientKey = key
	}
}

// tlsOn reports whether the settings ask for TLS.
func (s *securityConfig) tlsOn() bool {
	return s.tls || s.tlsRootCA != "" || s.tlsClientCert != "" || s.tlsClientKey != ""
}

// resolveToken applies the token default: the option, else $JOBWIRE_TOKEN.
func (s *securityConfig) resolveToken() string {
	if s.token != "" {
		return s.token
	}
	return os.Getenv(tokenEnv)
}

// dialOptions turns the settings into gRPC dial options: TLS transport
// credentials when TLS is on, per-RPC credentials when there is a token. A
// PEM file that cannot be read, a PEM that does not parse, or a token that
// cannot be sent in a header is an error here, before anything is dialled.
// hasToken tells whether a token is sent.
func (s *securityConfig) dialOptions() (opts []grpc.DialOption, hasToken bool, err error) {
	if s.tlsOn() {
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, false, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	}
	if token := s.resolveToken(); token != "" {
		if err := checkToken(token); err != nil {
			return nil, false, err
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken{value: "Bearer " + token}))
		hasToken = true
	}
	return opts, hasToken, nil
}

// tlsConfig builds the crypto/tls configuration of the settings. The server
// name checked against the broker's certificate is the host of the dialled
// address (gRPC sets it).
func (s *securityConfig) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.tlsRootCA != "" {
		pem, src, err := loadPEM("WithTLSRootCA", s.tlsRootCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("jobwire: WithTLSRootCA: %s holds no PEM certificate", src)
		}
		cfg.RootCAs = pool
	}
	if s.tlsClientCert != "" || s.tlsClientKey != "" {
		if s.tlsClientCert == "" || s.tlsClientKey == "" {
			return nil, errors.New("jobwire: WithTLSClientCert: give both the certificate and the key")
		}
		certPEM, certSrc, err := loadPEM("WithTLSClientCert: certificate", s.tlsClientCert)
		if err != nil {
			return nil, err
		}
		keyPEM, keySrc, err := loadPEM("WithTLSClientCert: key", s.tlsClientKey)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("jobwire: WithTLSClientCert: certificate (%s) / key (%s): %w", certSrc, keySrc, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// loadPEM returns v itself when it is PEM text, else the content of the file
// it names, and a description of the source for errors (the path, or "PEM
// text": PEM text, which may be a private key, is never quoted).
func loadPEM(field, v string) (pem []byte, src string, err error) {
	if strings.Contains(v, pemMarker) {
		return []byte(v), "PEM text", nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return nil, "", fmt.Errorf("jobwire: %s: cannot read PEM file: %w", field, err)
	}
	return b, "file " + v, nil
}

// checkToken refuses a token gRPC could not send as a header value
// (whitespace, control or non-ASCII characters); the error does not quote it.
func checkToken(token string) error {
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("jobwire: token: character %d is not printable ASCII (a trailing newline?)", i+1)
		}
	}
	return nil
}

// bearerToken is the per-RPC credentials adding "authorization: Bearer
// <token>" to every call. It does not require transport security, so a token
// also works over plaintext (a broker on loopback).
type bearerToken struct{ value string }

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.value}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return false }

// String and GoString keep the token out of formatted output.
func (bearerToken) String() string   { return "jobwire.bearerToken(redacted)" }
func (bearerToken) GoString() string { return "jobwire.bearerToken(redacted)" }
