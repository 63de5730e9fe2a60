// gRPC's own log lines (gpr_log: transport errors, TLS handshake failures,
// certificate reloads) written through base::Log, so that every line the
// broker prints is one JSON object: {"msg":<gRPC's text>,"source":"grpc",
// "file":..,"line":..} at gRPC's severity (debug, info, error).
//
// gRPC prints only what its verbosity allows: GRPC_VERBOSITY (default
// ERROR), or DEBUG when the broker's --log_level is debug. base::Log's level
// then filters as for every other line.
#ifndef JOBWIRE_BROKER_SERVER_GRPC_LOGGING_H_
#define JOBWIRE_BROKER_SERVER_GRPC_LOGGING_H_

namespace jobwire::server {

// Installs the routing. Call once, before the first gRPC object is made
// and after base::SetLogLevel.
void RouteGrpcLogs();

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_GRPC_LOGGING_H_
