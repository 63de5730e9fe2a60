// Transport security of the gRPC listener: TLS from PEM files, optionally
// mutual TLS, and the startup warnings about an exposed listener.
#ifndef JOBWIRE_BROKER_SERVER_TRANSPORT_SECURITY_H_
#define JOBWIRE_BROKER_SERVER_TRANSPORT_SECURITY_H_

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/server/broker_config.h"

namespace jobwire::server {

// The listener's credentials: insecure when config.tls_cert is empty, TLS
// with tls_cert / tls_key otherwise, and with tls_client_ca also set,
// clients must present a certificate signed by that CA (mutual TLS).
// Errors: the file errors of base::ReadFile (the message names the flag and
// the path, never the content); INVALID_ARGUMENT when a file holds no PEM
// block.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const BrokerConfig& config);

// True when the host of `listen` (host:port, [v6]:port) is a loopback
// address or "localhost"; false for wildcard and every other address.
bool IsLoopbackListen(absl::string_view listen);

// Logs a warning for each way the listener is exposed: not loopback and no
// authentication; not loopback and no TLS.
void WarnIfExposed(const BrokerConfig& config);

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_TRANSPORT_SECURITY_H_
