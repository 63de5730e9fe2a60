#include "broker/store/redis_url.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace jobwire::store {
namespace {

// Decodes %XX escapes; false on a malformed escape.
bool PercentDecode(absl::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    int value = 0;
    if (i + 2 >= in.size()) return false;
    for (char c : {in[i + 1], in[i + 2]}) {
      if (!absl::ascii_isxdigit(c)) return false;
      const char l = absl::ascii_tolower(c);
      value = value * 16 + (absl::ascii_isdigit(l) ? l - '0' : l - 'a' + 10);
    }
    out->push_back(static_cast<char>(value));
    i += 2;
  }
  return true;
}

// host[:port], [v6]:port or [v6]. `url` (without secrets) is for messages.
absl::StatusOr<RedisEndpoint> ParseEndpoint(absl::string_view in, absl::string_view url) {
  RedisEndpoint endpoint;
  absl::string_view host = in;
  absl::string_view port;
  if (absl::StartsWith(in, "[")) {
    const size_t close = in.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("unclosed [ in redis url: ", url));
    }
    host = in.substr(1, close - 1);
    absl::string_view after = in.substr(close + 1);
    if (!after.empty() && !absl::ConsumePrefix(&after, ":")) {
      return absl::InvalidArgumentError(absl::StrCat("bad host in redis url: ", url));
    }
    port = after;
    if (after.empty() && close + 1 < in.size()) port = "-";  // "[::1]:" has an empty port
  } else if (auto colon = in.rfind(':'); colon != absl::string_view::npos) {
    host = in.substr(0, colon);
    port = in.substr(colon + 1);
    if (port.empty()) port = "-";
  }
  if (!port.empty() &&
      (!absl::SimpleAtoi(port, &endpoint.port) || endpoint.port <= 0 || endpoint.port > 65535)) {
    return absl::InvalidArgumentError(absl::StrCat("bad port in redis url: ", url));
  }
  endpoint.host = host.empty() ? "127.0.0.1" : std::string(host);
  return endpoint;
}

}  // namespace

std::string RedisAddress::ToString() const {
  std::string hosts;
  for (const RedisEndpoint& e : seeds) {
    const bool v6 = absl::StrContains(e.host, ':');
    absl::StrAppend(&hosts, hosts.empty() ? "" : ",", v6 ? "[" : "", e.host, v6 ? "]" : "", ":",
                    e.port);
  }
  if (hosts.empty()) hosts = absl::StrCat(host, ":", port);
  return absl::StrCat(tls ? "rediss://" : "redis://", user.empty() ? "" : absl::StrCat(user, "@"),
                      hosts, "/", db);
}

absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url) {
  RedisAddress address;
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "rediss://")) {
    address.tls = true;
  } else if (!absl::ConsumePrefix(&rest, "redis://")) {
    return absl::InvalidArgumentError("redis url must start with redis:// or rediss:// (TLS)");
  }
  if (auto at = rest.rfind('@'); at != absl::string_view::npos) {
    absl::string_view userinfo = rest.substr(0, at);
    absl::string_view user;
    absl::string_view password = userinfo;
    if (auto colon = userinfo.find(':'); colon != absl::string_view::npos) {
      user = userinfo.substr(0, colon);
      password = userinfo.substr(colon + 1);
    }
    if (!PercentDecode(user, &address.user) || !PercentDecode(password, &address.password)) {
      return absl::InvalidArgumentError(
          "bad percent-escape in the user or password of the redis url");
    }
    rest = rest.substr(at + 1);
  }
  // From here on `url` may be quoted: without its user and password.
  url = rest;
  if (auto slash = rest.find('/'); slash != absl::string_view::npos) {
    absl::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!absl::SimpleAtoi(db, &address.db) || address.db < 0)) {
      return absl::InvalidArgumentError(absl::StrCat("bad database number in redis url: ", url));
    }
    rest = rest.substr(0, slash);
  }
  const std::vector<absl::string_view> hosts = absl::StrSplit(rest, ',');
  for (absl::string_view host : hosts) {
    if (host.empty() && hosts.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("empty host in redis url: ", url));
    }
    absl::StatusOr<RedisEndpoint> endpoint = ParseEndpoint(host, url);
    if (!endpoint.ok()) return endpoint.status();
    address.seeds.push_back(*std::move(endpoint));
  }
  address.host = address.seeds.front().host;
  address.port = address.seeds.front().port;
  return address;
}

absl::Status RequireSingleHost(const RedisAddress& address) {
  if (address.seeds.size() <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--redis_url lists ", address.seeds.size(),
      " hosts, but the broker talks to one Redis server (standalone mode) and takes exactly "
      "one host; Redis Cluster and Sentinel seeds are not supported yet: ",
      address.ToString()));
}

}  // namespace jobwire::store
