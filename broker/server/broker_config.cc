#include "broker/server/broker_config.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/base/build_info.h"
#include "broker/service/request_validator.h"

namespace {
const jobwire::server::BrokerConfig kDefaults;
}  // namespace

ABSL_FLAG(std::string, listen, "",
          "gRPC listen address (host:port); default 0.0.0.0:50051 with --auth_tokens_file, "
          "else 127.0.0.1:50051 (loopback only while nothing authenticates callers)");
ABSL_FLAG(std::string, redis_url, kDefaults.redis_url,
          "redis://[:password@]host[:port][/db] (with --redis_mode=sentinel: the sentinels, "
          "host:port,host:port,...); empty starts an embedded redis-server");
ABSL_FLAG(std::string, redis_mode, kDefaults.redis_mode,
          "standalone (--redis_url names the one Redis), sentinel (its comma-separated hosts "
          "are Redis Sentinels, asked for --redis_sentinel_master) or cluster (its hosts are "
          "seed nodes of a Redis Cluster)");
ABSL_FLAG(std::string, redis_sentinel_password, "",
          "with --redis_mode=sentinel: the sentinels' own password (their requirepass), when "
          "they have one; the master's password goes in --redis_url. Prefer "
          "JOBWIRE_REDIS_SENTINEL_PASSWORD: a flag shows in the process list");
ABSL_FLAG(std::string, redis_sentinel_master, "",
          "with --redis_mode=sentinel: the name the sentinels monitor the master under");
ABSL_FLAG(std::string, data_dir, kDefaults.data_dir,
          "data directory of the embedded redis-server (AOF persistence)");
ABSL_FLAG(std::string, redis_server_path, kDefaults.redis_server_path,
          "redis-server binary for the embedded Redis");
ABSL_FLAG(std::string, key_prefix, kDefaults.key_prefix, "prefix of every Redis key");
ABSL_FLAG(int64_t, default_lease_ms, kDefaults.default_lease_ms,
          "lease when a Claim or ExtendLease gives none (1000..43200000)");
ABSL_FLAG(int64_t, max_payload_bytes, kDefaults.max_payload_bytes,
          "largest payload or result accepted (1..67108864)");
ABSL_FLAG(int64_t, dedup_window_ms, kDefaults.dedup_window_ms,
          "how long an idempotency key is remembered");
ABSL_FLAG(int64_t, completed_retention_ms, kDefaults.completed_retention_ms,
          "how long a completed job and its result are kept, unless its Enqueue set its own "
          "completed_retention_ms");
ABSL_FLAG(int64_t, completed_retention_max_ms, kDefaults.completed_retention_max_ms,
          "the largest completed_retention_ms an Enqueue may set (at least "
          "--completed_retention_ms); more is INVALID_ARGUMENT");
ABSL_FLAG(int64_t, default_job_timeout_ms, kDefaults.default_job_timeout_ms,
          "the longest a run of a job may take unless its Enqueue set timeout_ms "
          "(0..604800000); 0 = no limit");
ABSL_FLAG(int64_t, dead_retention_ms, kDefaults.dead_retention_ms,
          "dead jobs older than this are removed by the reaper; 0 = kept until purged");
ABSL_FLAG(int64_t, dead_max_per_queue, kDefaults.dead_max_per_queue,
          "at most this many dead jobs per queue, the oldest removed first by the reaper; "
          "0 = no bound");
ABSL_FLAG(int64_t, idle_queue_ttl_ms, kDefaults.idle_queue_ttl_ms,
          "a queue empty this long (no job in any state, not paused) leaves the registry "
          "(ListQueues, the reaper's passes, metrics) until its next enqueue; 0 = never");
ABSL_FLAG(int32_t, default_max_attempts, kDefaults.default_max_attempts,
          "attempts when an Enqueue gives none (1..1000)");
ABSL_FLAG(int64_t, backoff_base_ms, kDefaults.backoff_base_ms, "default retry backoff base");
ABSL_FLAG(int64_t, backoff_max_ms, kDefaults.backoff_max_ms, "default retry backoff cap");
ABSL_FLAG(int64_t, shutdown_grace_ms, kDefaults.shutdown_grace_ms,
          "on SIGTERM, how long in-flight calls may take to finish");
ABSL_FLAG(int64_t, max_stream_age_ms, kDefaults.max_stream_age_ms,
          "a Claim stream ends with UNAVAILABLE after this long, jittered by +-10%, so "
          "that workers reconnect and load rebalances across replicas; 0 = unlimited");
ABSL_FLAG(int64_t, max_claim_streams, kDefaults.max_claim_streams,
          "Claim streams open at once on this broker; more get RESOURCE_EXHAUSTED (1..1000000)");
ABSL_FLAG(int64_t, max_claim_streams_per_peer, kDefaults.max_claim_streams_per_peer,
          "Claim streams open at once on one client connection; more get RESOURCE_EXHAUSTED "
          "(1..1000000)");
ABSL_FLAG(int64_t, max_wait_streams, kDefaults.max_wait_streams,
          "WaitJob streams open at once on this broker; more get RESOURCE_EXHAUSTED "
          "(1..1000000)");
ABSL_FLAG(int64_t, worker_report_interval_ms, kDefaults.worker_report_interval_ms,
          "how often this broker reports its open Claim streams to Redis for Admin ListWorkers "
          "(a report goes stale after three intervals) (100..600000)");
ABSL_FLAG(int64_t, max_subscriptions, kDefaults.max_subscriptions,
          "Subscribe streams open at once on this broker; more get RESOURCE_EXHAUSTED "
          "(1..1000000)");
ABSL_FLAG(int64_t, subscribe_buffer_events, kDefaults.subscribe_buffer_events,
          "events a Subscribe stream may have waiting to be sent; a client that falls "
          "further behind is cut off with RESOURCE_EXHAUSTED (1..1000000)");
ABSL_FLAG(std::string, metrics_listen, kDefaults.metrics_listen,
          "host:port of the Prometheus metrics endpoint (/metrics); empty disables it");
ABSL_FLAG(std::string, health_listen, "",
          "host:port of a plaintext gRPC listener serving only the health service, for "
          "probes that cannot speak TLS; empty: none");
ABSL_FLAG(std::string, log_level, kDefaults.log_level, "debug, info, warning or error");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain of the gRPC listener; enables TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificate(s); when set, clients must present a certificate signed by one "
          "(mutual TLS). Requires --tls_cert");
ABSL_FLAG(std::string, redis_tls_ca, "",
          "PEM CA certificate(s) that signed the Redis server's certificate (rediss://); "
          "empty: the system's default CAs");
ABSL_FLAG(std::string, redis_tls_cert, "",
          "PEM client certificate (chain) presented to Redis (rediss://); optional");
ABSL_FLAG(std::string, redis_tls_key, "", "PEM private key of --redis_tls_cert");
ABSL_FLAG(std::string, redis_tls_server_name, "",
          "name sent as SNI and checked against Redis' certificate; empty: the URL's host");
ABSL_FLAG(bool, redis_tls_insecure_skip_verify, false,
          "do not verify Redis' certificate (logged as a warning at start); never in production");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "JSON file of bearer tokens (SHA-256 hashed) and their permissions; see "
          "docs/security.md. Empty: no authentication");
ABSL_FLAG(int64_t, reload_interval_ms, kDefaults.reload_interval_ms,
          "how often the token file and the TLS files are checked for changes and reloaded "
          "(0, or 100..86400000; 0: only on SIGHUP, which reloads them at any setting)");

namespace jobwire::server {
namespace {

// Sets each flag from JOBWIRE_<NAME> when that variable is set.
absl::Status ApplyEnvironment() {
  for (const char* name : {"listen", "redis_url", "redis_mode", "redis_sentinel_master",
                           "redis_sentinel_password",
                           "data_dir", "redis_server_path", "key_prefix",
                           "default_lease_ms", "max_payload_bytes", "dedup_window_ms",
                           "completed_retention_ms", "completed_retention_max_ms",
                           "default_job_timeout_ms", "dead_retention_ms", "dead_max_per_queue", "idle_queue_ttl_ms",
                           "default_max_attempts", "backoff_base_ms",
                           "backoff_max_ms", "shutdown_grace_ms", "max_stream_age_ms",
                           "max_claim_streams", "max_claim_streams_per_peer", "max_wait_streams",
                           "worker_report_interval_ms",
                           "max_subscriptions", "subscribe_buffer_events",
                           "metrics_listen", "health_listen", "log_level", "tls_cert",
                           "tls_key", "tls_client_ca", "redis_tls_ca", "redis_tls_cert",
                           "redis_tls_key", "redis_tls_server_name",
                           "redis_tls_insecure_skip_verify", "auth_tokens_file",
                           "reload_interval_ms"}) {
    std::string var = absl::StrCat("JOBWIRE_", absl::AsciiStrToUpper(name));
    const char* value = std::getenv(var.c_str());
    if (value == nullptr) continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string error;
    if (flag == nullptr || !flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(var, ": ", error));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " must be in ", lo, "..", hi, ", got ", value));
}

// --redis_mode and the flags it needs or refuses.
absl::Status CheckRedisMode(const BrokerConfig& c) {
  if (c.redis_mode == "standalone" || c.redis_mode == "cluster") {
    if (!c.redis_sentinel_master.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--redis_sentinel_master needs --redis_mode=sentinel (the mode is ", c.redis_mode, ")"));
    }
    if (!c.redis_sentinel_password.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--redis_sentinel_password needs --redis_mode=sentinel (the mode is ", c.redis_mode,
          ")"));
    }
    if (c.redis_mode == "cluster" && c.redis_url.empty()) {
      return absl::InvalidArgumentError(
          "--redis_mode=cluster needs --redis_url listing seed nodes of the cluster "
          "(redis://host:port,host:port,...); the embedded Redis is standalone");
    }
    return absl::OkStatus();
  }
  if (c.redis_mode != "sentinel") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--redis_mode must be standalone, sentinel or cluster, got \"", c.redis_mode, "\""));
  }
  if (c.redis_sentinel_master.empty()) {
    return absl::InvalidArgumentError(
        "--redis_mode=sentinel needs --redis_sentinel_master (the master's name)");
  }
  if (c.redis_url.empty()) {
    return absl::InvalidArgumentError(
        "--redis_mode=sentinel needs --redis_url listing the sentinels "
        "(redis://host:port,host:port,...); the embedded Redis is standalone");
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// argv with each known flag's name spelt with underscores, which is how absl
// knows them: "--metrics-listen=x" -> "--metrics_listen=x", "--no-foo-bar" ->
// "--nofoo_bar" for a bool flag. Only a name that is a flag once rewritten is
// touched, and never a value: neither the part after '=' nor the argument
// after a non-bool flag given without one ("--key-prefix -a-b").
std::vector<std::string> WithUnderscoredFlagNames(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--") break;  // what follows is not a flag
    if (arg.size() < 2 || arg[0] != '-') continue;
    const size_t start = arg[1] == '-' ? 2 : 1;
    const size_t end = std::min(arg.find('='), arg.size());
    std::string name = arg.substr(start, end - start);
    std::replace(name.begin(), name.end(), '-', '_');
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    const bool negated = flag == nullptr && absl::StartsWith(name, "no_");
    if (negated) {
      flag = absl::FindCommandLineFlag(name.substr(3));
      if (flag == nullptr || !flag->IsOfType<bool>()) continue;
      name = "no" + name.substr(3);
    }
    if (flag == nullptr) continue;  // absl names it as unknown
    arg.replace(start, end - start, name);
    // "--flag value": the next argument is the value, whatever it looks like.
    if (end == arg.size() && !negated && !flag->IsOfType<bool>()) ++i;
  }
  return args;
}

}  // namespace

absl::StatusOr<BrokerConfig> LoadConfig(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "jobwire-broker: the jobwire job-queue broker. Every flag can also be set "
      "with JOBWIRE_<FLAG> in the environment; flag names take dashes or "
      "underscores (--metrics-listen or --metrics_listen).");
  absl::FlagsUsageConfig usage;
  usage.version_string = [] { return base::VersionLine("jobwire-broker") + "\n"; };
  absl::SetFlagsUsageConfig(usage);
  if (absl::Status env = ApplyEnvironment(); !env.ok()) return env;
  std::vector<std::string> args = WithUnderscoredFlagNames(argc, argv);
  std::vector<char*> arg_ptrs;
  for (std::string& arg : args) arg_ptrs.push_back(arg.data());
  absl::ParseCommandLine(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());

  BrokerConfig c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.redis_url = absl::GetFlag(FLAGS_redis_url);
  c.redis_mode = absl::GetFlag(FLAGS_redis_mode);
  c.redis_sentinel_master = absl::GetFlag(FLAGS_redis_sentinel_master);
  c.redis_sentinel_password = absl::GetFlag(FLAGS_redis_sentinel_password);
  c.data_dir = absl::GetFlag(FLAGS_data_dir);
  c.redis_server_path = absl::GetFlag(FLAGS_redis_server_path);
  c.key_prefix = absl::GetFlag(FLAGS_key_prefix);
  c.default_lease_ms = absl::GetFlag(FLAGS_default_lease_ms);
  c.max_payload_bytes = absl::GetFlag(FLAGS_max_payload_bytes);
  c.dedup_window_ms = absl::GetFlag(FLAGS_dedup_window_ms);
  c.completed_retention_ms = absl::GetFlag(FLAGS_completed_retention_ms);
  c.completed_retention_max_ms = absl::GetFlag(FLAGS_completed_retention_max_ms);
  c.default_job_timeout_ms = absl::GetFlag(FLAGS_default_job_timeout_ms);
  c.dead_retention_ms = absl::GetFlag(FLAGS_dead_retention_ms);
  c.dead_max_per_queue = absl::GetFlag(FLAGS_dead_max_per_queue);
  c.idle_queue_ttl_ms = absl::GetFlag(FLAGS_idle_queue_ttl_ms);
  c.default_max_attempts = absl::GetFlag(FLAGS_default_max_attempts);
  c.backoff_base_ms = absl::GetFlag(FLAGS_backoff_base_ms);
  c.backoff_max_ms = absl::GetFlag(FLAGS_backoff_max_ms);
  c.shutdown_grace_ms = absl::GetFlag(FLAGS_shutdown_grace_ms);
  c.max_stream_age_ms = absl::GetFlag(FLAGS_max_stream_age_ms);
  c.max_claim_streams = absl::GetFlag(FLAGS_max_claim_streams);
  c.max_claim_streams_per_peer = absl::GetFlag(FLAGS_max_claim_streams_per_peer);
  c.max_wait_streams = absl::GetFlag(FLAGS_max_wait_streams);
  c.worker_report_interval_ms = absl::GetFlag(FLAGS_worker_report_interval_ms);
  c.max_subscriptions = absl::GetFlag(FLAGS_max_subscriptions);
  c.subscribe_buffer_events = absl::GetFlag(FLAGS_subscribe_buffer_events);
  c.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  c.health_listen = absl::GetFlag(FLAGS_health_listen);
  c.log_level = absl::GetFlag(FLAGS_log_level);
  c.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  c.tls_key = absl::GetFlag(FLAGS_tls_key);
  c.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  c.redis_tls_ca = absl::GetFlag(FLAGS_redis_tls_ca);
  c.redis_tls_cert = absl::GetFlag(FLAGS_redis_tls_cert);
  c.redis_tls_key = absl::GetFlag(FLAGS_redis_tls_key);
  c.redis_tls_server_name = absl::GetFlag(FLAGS_redis_tls_server_name);
  c.redis_tls_insecure_skip_verify = absl::GetFlag(FLAGS_redis_tls_insecure_skip_verify);
  c.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens_file);
  c.reload_interval_ms = absl::GetFlag(FLAGS_reload_interval_ms);
  if (c.listen.empty()) {
    c.listen = c.auth_tokens_file.empty() ? kDefaults.listen : "0.0.0.0:50051";
  }

  using namespace jobwire::service;  // NOLINT: the limits
  for (absl::Status s : {
           CheckRange("default_lease_ms", c.default_lease_ms, kMinLeaseMs, kMaxLeaseMs),
           CheckRange("max_payload_bytes", c.max_payload_bytes, 1, 64 << 20),
           CheckRange("dedup_window_ms", c.dedup_window_ms, 1, 365LL * 24 * 3600 * 1000),
           CheckRange("completed_retention_ms", c.completed_retention_ms, 1,
                      365LL * 24 * 3600 * 1000),
           CheckRange("completed_retention_max_ms", c.completed_retention_max_ms,
                      c.completed_retention_ms, 365LL * 24 * 3600 * 1000),
           CheckRange("default_job_timeout_ms", c.default_job_timeout_ms, 0, kMaxJobTimeoutMs),
           CheckRange("dead_retention_ms", c.dead_retention_ms, 0, 10LL * 365 * 24 * 3600 * 1000),
           CheckRange("dead_max_per_queue", c.dead_max_per_queue, 0, 1000000000),
           CheckRange("idle_queue_ttl_ms", c.idle_queue_ttl_ms, 0, 365LL * 24 * 3600 * 1000),
           CheckRange("default_max_attempts", c.default_max_attempts, 1, kMaxAttempts),
           CheckRange("backoff_base_ms", c.backoff_base_ms, 1, kMaxBackoffMs),
           CheckRange("backoff_max_ms", c.backoff_max_ms, c.backoff_base_ms, kMaxBackoffMs),
           CheckRange("shutdown_grace_ms", c.shutdown_grace_ms, 0, 3600 * 1000),
           CheckRange("max_stream_age_ms", c.max_stream_age_ms, 0, 7LL * 24 * 3600 * 1000),
           CheckRange("max_claim_streams", c.max_claim_streams, 1, 1000000),
           CheckRange("max_claim_streams_per_peer", c.max_claim_streams_per_peer, 1, 1000000),
           CheckRange("max_wait_streams", c.max_wait_streams, 1, 1000000),
           CheckRange("worker_report_interval_ms", c.worker_report_interval_ms, 100, 600000),
           CheckRange("max_subscriptions", c.max_subscriptions, 1, 1000000),
           CheckRange("subscribe_buffer_events", c.subscribe_buffer_events, 1, 1000000),
       }) {
    if (!s.ok()) return s;
  }
  if (c.reload_interval_ms != 0) {
    if (absl::Status s = CheckRange("reload_interval_ms", c.reload_interval_ms, 100, 86400000);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(s.message(), " (or 0: only on SIGHUP)"));
    }
  }
  bool ok_prefix = !c.key_prefix.empty();
  for (char ch : c.key_prefix) ok_prefix = ok_prefix && ch != '{' && ch != '}' && ch != ' ';
  if (!ok_prefix) {
    return absl::InvalidArgumentError("--key_prefix must be non-empty, without braces or spaces");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key must be set together");
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls_client_ca requires --tls_cert and --tls_key");
  }
  if (c.redis_tls_cert.empty() != c.redis_tls_key.empty()) {
    return absl::InvalidArgumentError("--redis_tls_cert and --redis_tls_key must be set together");
  }
  const bool redis_tls_flags = !c.redis_tls_ca.empty() || !c.redis_tls_cert.empty() ||
                               !c.redis_tls_server_name.empty() ||
                               c.redis_tls_insecure_skip_verify;
  if (redis_tls_flags && !absl::StartsWith(c.redis_url, "rediss://")) {
    return absl::InvalidArgumentError(
        "--redis_tls_* flags need a rediss:// --redis_url (TLS); the embedded Redis and "
        "redis:// URLs are plaintext");
  }
  if (absl::Status mode = CheckRedisMode(c); !mode.ok()) return mode;
  return c;
}

}  // namespace jobwire::server
