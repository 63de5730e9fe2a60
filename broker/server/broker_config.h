// BrokerConfig: every setting of jobwire-broker, from flags, each also
// settable by an environment variable JOBWIRE_<FLAG IN UPPER CASE> (a flag on
// the command line wins over the variable).
#ifndef JOBWIRE_BROKER_SERVER_BROKER_CONFIG_H_
#define JOBWIRE_BROKER_SERVER_BROKER_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace jobwire::server {

struct BrokerConfig {
  // LoadConfig: --listen, else 0.0.0.0:50051 with --auth_tokens_file and
  // 127.0.0.1:50051 without (no authentication: loopback unless told).
  std::string listen = "127.0.0.1:50051";
  std::string redis_url;  // empty: start an embedded redis-server
  // "standalone": redis_url names the one Redis. "sentinel": its hosts are
  // Redis Sentinels, asked for the master named redis_sentinel_master
  // (required then, refused otherwise; redis_url required too). "cluster":
  // its hosts are seed nodes of a Redis Cluster (redis_url required).
  std::string redis_mode = "standalone";
  std::string redis_sentinel_master;
  // The sentinels' own password (their requirepass), when they have one;
  // sentinel mode only. Never logged.
  std::string redis_sentinel_password;
  std::string data_dir = "./jobwire-data";
  std::string redis_server_path = "redis-server";
  std::string key_prefix = "jw";
  int64_t default_lease_ms = 30000;
  int64_t max_payload_bytes = 1 << 20;
  int64_t dedup_window_ms = 24LL * 3600 * 1000;
  int64_t completed_retention_ms = 24LL * 3600 * 1000;
  // The most an Enqueue may ask for (its completed_retention_ms); at least
  // completed_retention_ms.
  int64_t completed_retention_max_ms = 7LL * 24 * 3600 * 1000;
  // The run timeout of a job whose Enqueue set no timeout_ms; 0: none.
  int64_t default_job_timeout_ms = 0;
  int64_t dead_retention_ms = 0;   // 0: dead jobs kept until purged
  int64_t dead_max_per_queue = 0;  // 0: no bound
  int64_t idle_queue_ttl_ms = 24LL * 3600 * 1000;  // 0: never dropped
  int32_t default_max_attempts = 3;
  int64_t backoff_base_ms = 1000;
  int64_t backoff_max_ms = 3600LL * 1000;
  int64_t shutdown_grace_ms = 25000;
  int64_t max_stream_age_ms = 30LL * 60 * 1000;  // 0: unlimited
  int64_t max_claim_streams = 10000;
  int64_t max_claim_streams_per_peer = 1000;  // per client connection
  int64_t max_wait_streams = 100000;  // WaitJob streams open at once
  // How often the broker reports its open Claim streams to Redis (Admin
  // ListWorkers); a report goes stale after three such intervals.
  int64_t worker_report_interval_ms = 10000;
  int64_t max_subscriptions = 10000;  // Subscribe streams open at once
  // Events one Subscribe stream may have waiting; a slower client is cut off.
  int64_t subscribe_buffer_events = 10000;
  std::string metrics_listen = "0.0.0.0:9464";   // empty: no metrics endpoint
  // A plaintext gRPC listener serving only grpc.health.v1 (and reflection),
  // for probes that cannot speak TLS (Kubernetes' gRPC probe); empty: none.
  std::string health_listen;
  std::string log_level = "info";
  // TLS on the gRPC listener (PEM paths): both or neither. With
  // tls_client_ca, clients must present a certificate signed by it.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  // TLS to Redis (rediss:// only; PEM paths): the CA that signed Redis'
  // certificate (empty: the system's CAs), an optional client certificate
  // and key (both or neither), the name to verify and send as SNI (empty:
  // the URL's host), and the explicit, logged opt-out of verification.
  std::string redis_tls_ca;
  std::string redis_tls_cert;
  std::string redis_tls_key;
  std::string redis_tls_server_name;
  bool redis_tls_insecure_skip_verify = false;
  // Bearer tokens and their permissions (docs/security.md); empty: every
  // caller may do everything.
  std::string auth_tokens_file;
  // How often the broker checks the token file and the TLS files (tls_cert,
  // tls_key, tls_client_ca) and reloads those that changed
  // (server/config_reloader.h); 0: never, only on SIGHUP.
  int64_t reload_interval_ms = 10000;
};

// Parses flags and environment; flag names take dashes or underscores, and
// --version prints base::VersionLine and exits. INVALID_ARGUMENT names the flag and its
// limit when a value is out of range, or the flags that must come together
// (--tls_cert with --tls_key; --tls_client_ca needs both; --redis_tls_cert
// with --redis_tls_key; any --redis_tls_* flag needs a rediss:// URL;
// --redis_mode is standalone, sentinel or cluster; sentinel needs
// --redis_sentinel_master and --redis_url, cluster needs --redis_url, and
// the others refuse --redis_sentinel_master; --reload_interval_ms is 0 or
// 100..86400000).
absl::StatusOr<BrokerConfig> LoadConfig(int argc, char** argv);

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_BROKER_CONFIG_H_
