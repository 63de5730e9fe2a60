#include "broker/server/reloadable_tls_credentials.h"

#include <string>

#include <grpcpp/security/tls_credentials_options.h>

#include "absl/strings/str_cat.h"

namespace jobwire::server {
namespace {

// What gRPC reads as both the certificate chain and the key: OpenSSL's PEM
// readers skip the blocks of the other kind.
std::string Identity(const TlsPem& pem) {
  return absl::StrCat(pem.cert, pem.cert.empty() || pem.cert.back() == '\n' ? "" : "\n", pem.key);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReloadableTlsCredentials>> ReloadableTlsCredentials::Create(
    const TlsPem& pem) {
  absl::StatusOr<CertificateInfo> checked = CheckTlsPem(pem);
  if (!checked.ok()) return checked.status();
  std::unique_ptr<ReloadableTlsCredentials> c(new ReloadableTlsCredentials());
  c->pem_ = pem;
  absl::StatusOr<std::unique_ptr<base::MemoryFile>> identity =
      base::MemoryFile::Create("jobwire-tls-identity", Identity(pem));
  if (!identity.ok()) return identity.status();
  c->identity_ = *std::move(identity);
  std::string client_ca_path;
  if (!pem.client_ca.empty()) {
    absl::StatusOr<std::unique_ptr<base::MemoryFile>> ca =
        base::MemoryFile::Create("jobwire-tls-client-ca", pem.client_ca);
    if (!ca.ok()) return ca.status();
    c->client_ca_ = *std::move(ca);
    client_ca_path = c->client_ca_->path();
  }
  // Reads the files once here, then every kRefreshSeconds on its own thread.
  c->provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      c->identity_->path(), c->identity_->path(), client_ca_path, kRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions options(c->provider_);
  options.watch_identity_key_cert_pairs();
  if (c->client_ca_ != nullptr) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  c->credentials_ = grpc::experimental::TlsServerCredentials(options);
  return c;
}

absl::StatusOr<CertificateInfo> ReloadableTlsCredentials::Update(const TlsPem& pem) {
  absl::StatusOr<CertificateInfo> checked = CheckTlsPem(pem);
  if (!checked.ok()) return checked.status();
  if (pem.client_ca.empty() != (client_ca_ == nullptr)) {
    return absl::FailedPreconditionError(
        client_ca_ == nullptr
            ? "--tls_client_ca was not set at start: a reload cannot switch mutual TLS on"
            : "--tls_client_ca is empty: a reload cannot switch mutual TLS off");
  }
  if (pem.cert != pem_.cert || pem.key != pem_.key) {
    if (absl::Status s = identity_->Replace(Identity(pem)); !s.ok()) return s;
    pem_.cert = pem.cert;
    pem_.key = pem.key;
  }
  if (pem.client_ca != pem_.client_ca) {
    if (absl::Status s = client_ca_->Replace(pem.client_ca); !s.ok()) return s;
    pem_.client_ca = pem.client_ca;
  }
  return checked;
}

}  // namespace jobwire::server
