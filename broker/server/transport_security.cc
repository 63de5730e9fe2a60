#include "broker/server/transport_security.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "broker/base/file.h"
#include "broker/base/logging.h"
#include "broker/base/status_macros.h"

namespace jobwire::server {
namespace {

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  absl::StatusOr<std::string> pem = base::ReadFile(path);
  if (!pem.ok()) {
    return absl::Status(pem.status().code(), absl::StrCat("--", flag, ": ", pem.status().message()));
  }
  if (!absl::StrContains(*pem, "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", path, " holds no PEM block"));
  }
  return pem;
}

// A read-only BIO over `pem` (which must outlive it).
std::unique_ptr<BIO, decltype(&BIO_free)> MemoryBio(const std::string& pem) {
  return {BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free};
}

// PEM password callback: no password, so an encrypted key fails to load
// instead of prompting on the terminal.
int NoPassword(char*, int, int, void*) { return 0; }

// INVALID_ARGUMENT: `what`, and OpenSSL's reason when it gave one. Clears
// OpenSSL's error queue.
absl::Status OpenSslError(absl::string_view what) {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  const char* reason = code == 0 ? nullptr : ERR_reason_error_string(code);
  return absl::InvalidArgumentError(
      reason == nullptr ? std::string(what) : absl::StrCat(what, " (", reason, ")"));
}

std::string Subject(X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), BIO_free);
  X509_NAME_print_ex(out.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return std::string(data, size > 0 ? static_cast<size_t>(size) : 0);
}

std::string RFC3339(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromTM(tm, absl::UTCTimeZone()),
                          absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<TlsPem> ReadTlsPem(const BrokerConfig& config) {
  TlsPem pem;
  JW_ASSIGN_OR_RETURN(pem.cert, ReadPem("tls_cert", config.tls_cert));
  JW_ASSIGN_OR_RETURN(pem.key, ReadPem("tls_key", config.tls_key));
  if (!config.tls_client_ca.empty()) {
    JW_ASSIGN_OR_RETURN(pem.client_ca, ReadPem("tls_client_ca", config.tls_client_ca));
  }
  absl::StatusOr<CertificateInfo> checked = CheckTlsPem(pem);
  if (!checked.ok()) return checked.status();
  return pem;
}

absl::StatusOr<CertificateInfo> CheckTlsPem(const TlsPem& pem) {
  ERR_clear_error();
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(MemoryBio(pem.cert).get(), nullptr, NoPassword, nullptr), X509_free);
  if (cert == nullptr) return OpenSslError("--tls_cert: no PEM certificate");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(MemoryBio(pem.key).get(), nullptr, NoPassword, nullptr),
      EVP_PKEY_free);
  if (key == nullptr) return OpenSslError("--tls_key: no PEM private key (or an encrypted one)");
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return OpenSslError("--tls_key: the key does not match the certificate of --tls_cert");
  }
  if (!pem.client_ca.empty()) {
    std::unique_ptr<X509, decltype(&X509_free)> ca(
        PEM_read_bio_X509(MemoryBio(pem.client_ca).get(), nullptr, NoPassword, nullptr),
        X509_free);
    if (ca == nullptr) return OpenSslError("--tls_client_ca: no PEM certificate");
  }
  CertificateInfo info;
  info.subject = Subject(cert.get());
  info.not_after = RFC3339(X509_get0_notAfter(cert.get()));
  return info;
}

bool IsLoopbackListen(absl::string_view listen) {
  absl::string_view host = listen;
  if (absl::StartsWith(host, "[")) {
    host = host.substr(1, host.find(']') == absl::string_view::npos ? 0 : host.find(']') - 1);
  } else if (auto colon = host.rfind(':'); colon != absl::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) != 0;
  }
  return false;
}

void WarnIfExposed(const BrokerConfig& config) {
  if (IsLoopbackListen(config.listen)) return;
  if (config.auth_tokens_file.empty()) {
    base::Log(base::LogLevel::kWarning,
              "listening beyond loopback without authentication: anyone who can reach this "
              "address may enqueue, claim and administer every queue (set --auth_tokens_file)",
              {{"listen", config.listen}});
  }
  if (config.tls_cert.empty()) {
    base::Log(base::LogLevel::kWarning,
              "listening beyond loopback without TLS: jobs, results and tokens cross the "
              "network in clear text (set --tls_cert and --tls_key)",
              {{"listen", config.listen}});
  }
}

}  // namespace jobwire::server
