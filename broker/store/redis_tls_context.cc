#include "broker/store/redis_tls_context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"

namespace jobwire::store {
namespace {

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

absl::Status FileError(const char* what, const std::string& path) {
  std::string reason = DrainOpenSslErrors();
  return absl::InvalidArgumentError(absl::StrCat("cannot load the Redis TLS ", what, " ", path,
                                                 reason.empty() ? "" : ": ", reason));
}

}  // namespace

std::string DrainOpenSslErrors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const RedisTlsContext>> RedisTlsContext::Create(
    const RedisTlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--redis_tls_cert and --redis_tls_key must be set together");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return absl::InternalError("SSL_CTX_new failed: " + DrainOpenSslErrors());
  std::shared_ptr<const RedisTlsContext> out(new RedisTlsContext(ctx, options));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Redis closes without close_notify when it stops: an ordinary EOF (RESP
  // frames carry their own lengths, so truncation cannot pass unnoticed).
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(ctx, options.insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     nullptr);
  if (options.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return FileError("system CA paths", "(default)");
    }
  } else if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
    return FileError("CA file (--redis_tls_ca)", options.ca_file);
  }
  if (!options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
      return FileError("client certificate (--redis_tls_cert)", options.cert_file);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return FileError("client key (--redis_tls_key)", options.key_file);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return FileError("client key (--redis_tls_key), which does not match --redis_tls_cert,",
                       options.key_file);
    }
  }
  return out;
}

RedisTlsContext::RedisTlsContext(SSL_CTX* ctx, RedisTlsOptions options)
    : ctx_(ctx), options_(std::move(options)) {}

RedisTlsContext::~RedisTlsContext() { SSL_CTX_free(ctx_); }

SSL* RedisTlsContext::NewSsl(const std::string& host) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  const std::string& name = options_.server_name.empty() ? host : options_.server_name;
  bool ok = true;
  if (IsIpLiteral(name)) {
    if (!options_.insecure_skip_verify) {
      ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
    }
  } else {
    ok = SSL_set_tlsext_host_name(ssl, name.c_str()) == 1;
    if (ok && !options_.insecure_skip_verify) {
      SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      ok = SSL_set1_host(ssl, name.c_str()) == 1;
    }
  }
  if (!ok) {
    SSL_free(ssl);
    return nullptr;
  }
  return ssl;
}

}  // namespace jobwire::store
