// ReloadableTlsCredentials: the gRPC listener's TLS credentials, whose
// certificate, key and client CA can be replaced while the server runs: new
// connections get the new ones within a second, open connections keep
// theirs.
//
// gRPC 1.51's FileWatcherCertificateProvider reloads files by itself, but
// passes on whatever it reads: a key that does not match its certificate
// (or a file that is not PEM) leaves its TLS server with no usable
// certificate, failing every new handshake until a good pair is written
// ("Update handshaker factory failed" in gRPC's log). So the provider here
// watches MemoryFiles instead of the operator's files, and Update puts only
// PEM that CheckTlsPem accepted there: the certificate chain and its key in
// one file (so that gRPC, which checks modification times around its reads,
// never reads a new key with an old certificate), the client CA in another.
//
// Thread safety: Update from one thread at a time; credentials() from any.
#ifndef JOBWIRE_BROKER_SERVER_RELOADABLE_TLS_CREDENTIALS_H_
#define JOBWIRE_BROKER_SERVER_RELOADABLE_TLS_CREDENTIALS_H_

#include <memory>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "broker/base/memory_file.h"
#include "broker/server/transport_security.h"

namespace jobwire::server {

class ReloadableTlsCredentials {
 public:
  // How often gRPC reads the MemoryFiles (its file watcher counts seconds).
  static constexpr unsigned kRefreshSeconds = 1;

  // Credentials serving `pem`: TLS, and mutual TLS (a client certificate
  // signed by pem.client_ca required) when pem.client_ca is not empty. The
  // errors of CheckTlsPem; INTERNAL when the MemoryFiles cannot be made.
  static absl::StatusOr<std::unique_ptr<ReloadableTlsCredentials>> Create(const TlsPem& pem);
  // REQUIRES: every server built with credentials() is destroyed (gRPC's
  // watcher thread reads the MemoryFiles until then).
  ~ReloadableTlsCredentials() = default;

  std::shared_ptr<grpc::ServerCredentials> credentials() const { return credentials_; }

  // Serves `pem` to new connections from gRPC's next read (within
  // kRefreshSeconds); nothing happens when it is the PEM served already.
  // Returns the certificate's subject and expiry (for the log); the errors
  // of CheckTlsPem, FAILED_PRECONDITION when pem.client_ca is empty now and
  // was not at Create or the other way round (a reload does not switch
  // mutual TLS on or off), INTERNAL when a MemoryFile cannot be replaced. On
  // error the PEM served stays.
  absl::StatusOr<CertificateInfo> Update(const TlsPem& pem);

 private:
  ReloadableTlsCredentials() = default;

  TlsPem pem_;  // served (as far as gRPC has read it)
  std::unique_ptr<base::MemoryFile> identity_;   // certificate chain, then key
  std::unique_ptr<base::MemoryFile> client_ca_;  // null without mutual TLS
  // Declared after the files: destroyed first.
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> provider_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_RELOADABLE_TLS_CREDENTIALS_H_
