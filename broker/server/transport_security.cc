#include "broker/server/transport_security.h"

#include <arpa/inet.h>

#include <grpcpp/security/server_credentials.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/base/file.h"
#include "broker/base/logging.h"

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

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const BrokerConfig& config) {
  if (config.tls_cert.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadPem("tls_cert", config.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls_key", config.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!config.tls_client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("tls_client_ca", config.tls_client_ca);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
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
