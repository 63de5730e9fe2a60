// Transport security of the gRPC listener: reading and checking its PEM files
// (TLS, optionally mutual TLS; the credentials are ReloadableTlsCredentials),
// and the startup warnings about an exposed listener.
#ifndef JOBWIRE_BROKER_SERVER_TRANSPORT_SECURITY_H_
#define JOBWIRE_BROKER_SERVER_TRANSPORT_SECURITY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/server/broker_config.h"

namespace jobwire::server {

// The PEM content of the listener's TLS files.
struct TlsPem {
  std::string cert;       // certificate chain, the server's own first
  std::string key;        // its private key
  std::string client_ca;  // empty: no client certificates (no mutual TLS)

  bool operator==(const TlsPem& other) const {
    return cert == other.cert && key == other.key && client_ca == other.client_ca;
  }
};

// What the log says about a certificate.
struct CertificateInfo {
  std::string subject;    // RFC 2253, e.g. "CN=jobwire.default.svc"
  std::string not_after;  // RFC 3339, UTC
};

// Reads config.tls_cert, tls_key and tls_client_ca (when set), and checks
// them with CheckTlsPem. REQUIRES: config.tls_cert and tls_key are set.
// Errors: the file errors of base::ReadFile (the message names the flag and
// the path, never the content); INVALID_ARGUMENT when a file holds no PEM
// block, or for the errors of CheckTlsPem.
absl::StatusOr<TlsPem> ReadTlsPem(const BrokerConfig& config);

// Checks what gRPC's TLS server will need, with OpenSSL: `pem.cert` holds a
// certificate, `pem.key` a private key (not encrypted) matching it, and
// `pem.client_ca`, when not empty, a certificate. Returns the server
// certificate's subject and expiry; INVALID_ARGUMENT naming the flag at fault
// (--tls_cert, --tls_key, --tls_client_ca) and OpenSSL's reason, never the
// content.
absl::StatusOr<CertificateInfo> CheckTlsPem(const TlsPem& pem);

// True when the host of `listen` (host:port, [v6]:port) is a loopback
// address or "localhost"; false for wildcard and every other address.
bool IsLoopbackListen(absl::string_view listen);

// Logs a warning for each way the listener is exposed: not loopback and no
// authentication; not loopback and no TLS.
void WarnIfExposed(const BrokerConfig& config);

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_TRANSPORT_SECURITY_H_
