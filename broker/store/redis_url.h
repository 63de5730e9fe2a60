// RedisAddress and ParseRedisUrl: where the broker's Redis is and how to log
// in, parsed from a redis:// or rediss:// URL; RedisTlsOptions: the
// certificate files of a rediss:// connection (from flags, not the URL).
#ifndef JOBWIRE_BROKER_STORE_REDIS_URL_H_
#define JOBWIRE_BROKER_STORE_REDIS_URL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwire::store {

// One host:port of a URL.
struct RedisEndpoint {
  std::string host;
  int port = 6379;
};

struct RedisAddress {
  std::string host = "127.0.0.1";  // the first (in standalone mode the only) host
  int port = 6379;
  std::string password;  // empty: no AUTH
  int db = 0;
  std::string user = "";  // ACL user; empty: AUTH <password> (the default user)
  bool tls = false;       // rediss://
  // Every host of the URL in order, the first being host:port. One entry
  // unless the URL lists several comma-separated hosts (for a cluster's or
  // sentinels' seeds; standalone mode refuses them: RequireSingleHost).
  std::vector<RedisEndpoint> seeds = {};

  // redis[s]://[user@]host:port[,host:port...]/db: never the password.
  std::string ToString() const;
};

// Parses redis[s]://[[user]:password@]host[:port][,host[:port]...][/db]
// (also redis://password@host for the default user); user and password are
// percent-decoded; an IPv6 host is written in brackets ([::1]:6379). A host
// without a port gets 6379; an empty host 127.0.0.1. INVALID_ARGUMENT
// otherwise; the message never contains the password.
absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url);

// OK when `address` names one host; INVALID_ARGUMENT naming the count when
// it lists several (cluster and sentinel seeds, which one standalone Redis
// connection cannot use).
absl::Status RequireSingleHost(const RedisAddress& address);

// The TLS side of a rediss:// connection. Certificate verification is always
// on unless insecure_skip_verify (logged as a warning where it is set).
struct RedisTlsOptions {
  std::string ca_file;      // PEM CA bundle; empty: the system's default CAs
  std::string cert_file;    // PEM client certificate (chain); optional
  std::string key_file;     // PEM key of cert_file; with it or not at all
  std::string server_name;  // SNI and the name verified; empty: the URL's host
  bool insecure_skip_verify = false;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_URL_H_
