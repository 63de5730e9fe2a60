#include "broker/service/authorizer.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/base/file.h"
#include "nlohmann/json.hpp"

namespace jobwire::service {
namespace {

constexpr absl::string_view kBearer = "bearer ";

std::array<unsigned char, 32> Sha256(absl::string_view text) {
  std::array<unsigned char, 32> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

bool ParseHexDigest(const std::string& hex, std::array<unsigned char, 32>* out) {
  if (hex.size() != 64) return false;
  for (size_t i = 0; i < 32; ++i) {
    int byte = 0;
    for (char c : {hex[2 * i], hex[2 * i + 1]}) {
      const char l = absl::ascii_tolower(c);
      int nibble;
      if (l >= '0' && l <= '9') {
        nibble = l - '0';
      } else if (l >= 'a' && l <= 'f') {
        nibble = l - 'a' + 10;
      } else {
        return false;
      }
      byte = byte * 16 + nibble;
    }
    (*out)[i] = static_cast<unsigned char>(byte);
  }
  return true;
}

bool Matches(const std::vector<std::string>& patterns, absl::string_view queue) {
  for (const std::string& p : patterns) {
    if (absl::EndsWith(p, "*") ? absl::StartsWith(queue, absl::string_view(p).substr(0, p.size() - 1))
                               : queue == p) {
      return true;
    }
  }
  return false;
}

const char* Describe(Permission permission) {
  switch (permission) {
    case Permission::kEnqueue:
      return "enqueue to";
    case Permission::kClaim:
      return "claim from";
    case Permission::kAdmin:
      return "administer";
    case Permission::kRead:
      return "read jobs of (needs enqueue, claim or admin on)";
  }
  return "use";
}

// Reads entry[key] (absent: empty) as a list of patterns into `out`.
absl::Status ReadPatterns(const nlohmann::json& entry, const char* key, const std::string& where,
                          std::vector<std::string>* out) {
  if (!entry.contains(key)) return absl::OkStatus();
  const nlohmann::json& list = entry[key];
  if (!list.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".", key, ": must be a list of queue patterns"));
  }
  for (const nlohmann::json& item : list) {
    if (!item.is_string() || item.get<std::string>().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".", key, ": every pattern must be a non-empty string"));
    }
    std::string pattern = item.get<std::string>();
    if (const size_t star = pattern.find('*');
        star != std::string::npos && star + 1 != pattern.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".", key, ": \"", pattern, "\": \"*\" is allowed only at the end"));
    }
    out->push_back(std::move(pattern));
  }
  return absl::OkStatus();
}

}  // namespace

std::string Sha256Hex(absl::string_view token) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : Sha256(token)) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::FromFile(absl::string_view path,
                                                                 std::string* content) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return text.status();
  if (content != nullptr) *content = *text;
  absl::StatusOr<std::unique_ptr<Authorizer>> parsed = FromJson(*text);
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(),
                        absl::StrCat(path, ": ", parsed.status().message()));
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::FromJson(absl::string_view json) {
  absl::StatusOr<std::shared_ptr<const Principals>> principals = Parse(json);
  if (!principals.ok()) return principals.status();
  auto authorizer = std::make_unique<Authorizer>();
  authorizer->enabled_ = true;
  absl::MutexLock lock(&authorizer->mu_);
  authorizer->principals_ = *std::move(principals);
  return authorizer;
}

absl::StatusOr<std::shared_ptr<const Authorizer::Principals>> Authorizer::Parse(
    absl::string_view json) {
  const nlohmann::json doc = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("not valid JSON");
  if (!doc.is_object() || !doc.contains("tokens") || !doc["tokens"].is_array()) {
    return absl::InvalidArgumentError("expected an object {\"tokens\": [...]}");
  }
  auto principals = std::make_shared<Principals>();
  std::set<std::string> names;
  std::set<std::array<unsigned char, 32>> hashes;
  for (size_t i = 0; i < doc["tokens"].size(); ++i) {
    const nlohmann::json& entry = doc["tokens"][i];
    std::string where = absl::StrCat("tokens[", i, "]");
    if (!entry.is_object()) return absl::InvalidArgumentError(absl::StrCat(where, ": not an object"));
    for (const auto& [key, value] : entry.items()) {
      if (key != "name" && key != "sha256" && key != "enqueue" && key != "claim" && key != "admin") {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": unknown key \"", key, "\" (name, sha256, enqueue, claim, admin)"));
      }
    }
    Principal p;
    if (!entry.contains("name") || !entry["name"].is_string() ||
        entry["name"].get<std::string>().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".name: required, a non-empty string"));
    }
    p.name = entry["name"].get<std::string>();
    where = absl::StrCat(where, " (", p.name, ")");
    if (!names.insert(p.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the name is used twice"));
    }
    if (!entry.contains("sha256") || !entry["sha256"].is_string() ||
        !ParseHexDigest(entry["sha256"].get<std::string>(), &p.sha256)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".sha256: required, the 64 hex digits of the token's SHA-256"));
    }
    if (!hashes.insert(p.sha256).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".sha256: the same token is listed twice"));
    }
    for (auto [key, list] : {std::pair{"enqueue", &p.enqueue}, std::pair{"claim", &p.claim},
                             std::pair{"admin", &p.admin}}) {
      if (absl::Status s = ReadPatterns(entry, key, where, list); !s.ok()) return s;
    }
    principals->push_back(std::move(p));
  }
  return std::shared_ptr<const Principals>(std::move(principals));
}

size_t Authorizer::token_count() const { return principals()->size(); }

std::shared_ptr<const Authorizer::Principals> Authorizer::principals() const {
  absl::ReaderMutexLock lock(&mu_);
  return principals_;
}

absl::Status Authorizer::Reload(absl::string_view json) {
  if (!enabled_) {
    return absl::FailedPreconditionError(
        "authentication is off (no --auth_tokens_file at start): a reload cannot switch it on");
  }
  absl::StatusOr<std::shared_ptr<const Principals>> principals = Parse(json);
  if (!principals.ok()) return principals.status();
  std::shared_ptr<const Principals> old;
  {
    absl::MutexLock lock(&mu_);
    old = std::exchange(principals_, *std::move(principals));
  }
  // The old set is freed here, outside the lock, unless a caller still
  // holds one of its principals.
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Principal>> Authorizer::Authenticate(
    const grpc::ServerContextBase& ctx) const {
  if (!enabled_) return nullptr;
  const auto& metadata = ctx.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return base::WithReason(absl::UnauthenticatedError(
                                "missing bearer token: send metadata \"authorization: Bearer <token>\""),
                            base::reason::kTokenMissing);
  }
  const absl::string_view value(it->second.data(), it->second.size());
  if (value.size() <= kBearer.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kBearer.size()), kBearer)) {
    return base::WithReason(absl::UnauthenticatedError(
                                "malformed authorization metadata: expected \"Bearer <token>\""),
                            base::reason::kTokenInvalid);
  }
  const std::array<unsigned char, 32> digest = Sha256(value.substr(kBearer.size()));
  const std::shared_ptr<const Principals> principals = this->principals();
  // Every entry is compared, in constant time, whatever matched earlier.
  const Principal* found = nullptr;
  for (const Principal& p : *principals) {
    const bool equal = CRYPTO_memcmp(digest.data(), p.sha256.data(), digest.size()) == 0;
    if (equal) found = &p;
  }
  if (found == nullptr) {
    return base::WithReason(absl::UnauthenticatedError("invalid bearer token"),
                            base::reason::kTokenInvalid);
  }
  // Shares ownership of the whole set, which a Reload may drop meanwhile.
  return std::shared_ptr<const Principal>(principals, found);
}

bool Authorizer::Allows(const Principal* principal, Permission permission,
                        absl::string_view queue) {
  if (principal == nullptr) return true;
  switch (permission) {
    case Permission::kEnqueue:
      return Matches(principal->enqueue, queue);
    case Permission::kClaim:
      return Matches(principal->claim, queue);
    case Permission::kAdmin:
      return Matches(principal->admin, queue);
    case Permission::kRead:
      // An administrator reads what ListJobs already shows it.
      return Matches(principal->enqueue, queue) || Matches(principal->claim, queue) ||
             Matches(principal->admin, queue);
  }
  return false;
}

absl::Status Authorizer::Authorize(const grpc::ServerContextBase& ctx, Permission permission,
                                   absl::Span<const absl::string_view> queues) const {
  absl::StatusOr<std::shared_ptr<const Principal>> principal = Authenticate(ctx);
  if (!principal.ok()) return principal.status();
  for (absl::string_view queue : queues) {
    if (!Allows(principal->get(), permission, queue)) {
      return base::WithMetadata(
          base::WithReason(absl::PermissionDeniedError(absl::StrCat(
                               "token \"", (*principal)->name, "\" may not ",
                               Describe(permission), " queue \"", queue, "\"")),
                           base::reason::kTokenNotPermitted),
          "queue", queue);
    }
  }
  return absl::OkStatus();
}

}  // namespace jobwire::service
