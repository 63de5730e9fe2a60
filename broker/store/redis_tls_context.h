// RedisTlsContext: the OpenSSL client context of rediss:// connections, built
// once from RedisTlsOptions, and the per-connection SSL objects made from it
// (server name for SNI and verification, certificate checks on).
#ifndef JOBWIRE_BROKER_STORE_REDIS_TLS_CONTEXT_H_
#define JOBWIRE_BROKER_STORE_REDIS_TLS_CONTEXT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "broker/store/redis_url.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace jobwire::store {

// Thread safety: immutable after Create; NewSsl may be called from any
// thread (OpenSSL contexts are shareable once configured).
class RedisTlsContext {
 public:
  // Loads the CA file (or the system's default verify paths when
  // options.ca_file is empty) and the optional client certificate and key.
  // INVALID_ARGUMENT naming the file and OpenSSL's reason when one cannot be
  // loaded, or when only one of cert_file / key_file is set, or the key does
  // not match the certificate. Never reads or logs a password.
  static absl::StatusOr<std::shared_ptr<const RedisTlsContext>> Create(
      const RedisTlsOptions& options);
  ~RedisTlsContext();
  RedisTlsContext(const RedisTlsContext&) = delete;
  RedisTlsContext& operator=(const RedisTlsContext&) = delete;

  // A new client SSL (owned by the caller) for a connection to `host`: SNI
  // and the verified name are options.server_name, else `host` (an IP
  // literal is checked against the certificate's IP SANs and sent without
  // SNI). nullptr when OpenSSL fails (out of memory).
  SSL* NewSsl(const std::string& host) const;

  bool verifies() const { return !options_.insecure_skip_verify; }

 private:
  RedisTlsContext(SSL_CTX* ctx, RedisTlsOptions options);

  SSL_CTX* const ctx_;
  const RedisTlsOptions options_;
};

// The OpenSSL error queue as text ("; "-joined), emptied; "" when empty.
std::string DrainOpenSslErrors();

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_TLS_CONTEXT_H_
