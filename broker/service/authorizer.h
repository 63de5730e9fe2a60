// Authorizer: who may call what. Callers present a bearer token in the
// "authorization: Bearer <token>" metadata; the token file (docs/security.md)
// lists each token by the SHA-256 of its text, with a name and the queues it
// may enqueue to, claim from and administer:
//
//   {"tokens": [
//     {"name": "billing-api", "sha256": "<64 hex>", "enqueue": ["billing.*"]},
//     {"name": "ops", "sha256": "<64 hex>", "admin": ["*"]}
//   ]}
//
// A pattern is an exact queue name, or a prefix followed by one trailing "*"
// ("billing.*", "*" for every queue). The handlers of BrokerService and
// AdminService call Authorize after validating a request. Without a token
// file (the default-constructed Authorizer) every call is allowed.
//
// Errors never contain a token (nor its hash): UNAUTHENTICATED when the
// token is missing or unknown, PERMISSION_DENIED naming the token's name, the
// permission and the queue.
//
// Reload replaces the tokens while the broker runs (server/config_reloader.h):
// each call checks the set current when it starts; a principal returned by
// Authenticate stays valid (shared) after its token is removed, so a call or
// stream already authorized runs to its end.
//
// Thread safety: every method is thread-safe.
#ifndef JOBWIRE_BROKER_SERVICE_AUTHORIZER_H_
#define JOBWIRE_BROKER_SERVICE_AUTHORIZER_H_

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace jobwire::service {

enum class Permission {
  kEnqueue,  // Enqueue, EnqueueBatch, GetJob, Cancel
  kClaim,    // Claim, Ack, AckBatch, Fail, ExtendLease, ReportProgress, GetJob
  kAdmin,    // the Admin service
  kRead,     // GetJob, WaitJob, Subscribe: kEnqueue, kClaim or kAdmin
};

// One entry of the token file.
struct Principal {
  std::string name;
  std::array<unsigned char, 32> sha256{};
  std::vector<std::string> enqueue;  // queue patterns
  std::vector<std::string> claim;
  std::vector<std::string> admin;
};

class Authorizer {
 public:
  // Allows every call.
  Authorizer() = default;

  // Reads the token file at `path`, and sets *content (when not null) to
  // what it read. The errors of base::ReadFile, or INVALID_ARGUMENT naming
  // the path and the entry at fault.
  static absl::StatusOr<std::unique_ptr<Authorizer>> FromFile(absl::string_view path,
                                                              std::string* content = nullptr);
  // Parses the token file's content. INVALID_ARGUMENT for malformed JSON, an
  // unknown key, a missing or duplicate name, a sha256 that is not 64 hex
  // digits or is listed twice, or a pattern with "*" anywhere but last.
  static absl::StatusOr<std::unique_ptr<Authorizer>> FromJson(absl::string_view json);

  // False for the allow-everything Authorizer.
  bool enabled() const { return enabled_; }
  size_t token_count() const;

  // Replaces the tokens with the ones the token file content `json` lists.
  // The errors of FromJson, and FAILED_PRECONDITION for the allow-everything
  // Authorizer (a reload does not switch authentication on, nor off); on
  // error the current tokens stay.
  absl::Status Reload(absl::string_view json);

  // The caller of `ctx`: null when authentication is off (every call
  // allowed), else the principal whose hash matches the bearer token
  // (compared in constant time against every entry), which stays valid
  // after a Reload. UNAUTHENTICATED when the token is missing or matches no
  // entry.
  absl::StatusOr<std::shared_ptr<const Principal>> Authenticate(
      const grpc::ServerContextBase& ctx) const;

  // True when `principal` (nullptr: everyone) has `permission` on `queue`.
  static bool Allows(const Principal* principal, Permission permission, absl::string_view queue);

  // Authenticate, then Allows on each queue: OK, UNAUTHENTICATED, or
  // PERMISSION_DENIED for the first queue not allowed.
  absl::Status Authorize(const grpc::ServerContextBase& ctx, Permission permission,
                         absl::Span<const absl::string_view> queues) const;
  absl::Status Authorize(const grpc::ServerContextBase& ctx, Permission permission,
                         absl::string_view queue) const {
    return Authorize(ctx, permission, absl::MakeConstSpan(&queue, 1));
  }

 private:
  using Principals = std::vector<Principal>;
  // The entries of a token file's content: the errors of FromJson.
  static absl::StatusOr<std::shared_ptr<const Principals>> Parse(absl::string_view json);
  std::shared_ptr<const Principals> principals() const;

  bool enabled_ = false;  // set before the Authorizer is shared
  mutable absl::Mutex mu_;
  // Replaced whole by Reload; never null.
  std::shared_ptr<const Principals> principals_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const Principals>();
};

// The lowercase hex SHA-256 of `token`: what the token file stores.
std::string Sha256Hex(absl::string_view token);

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_AUTHORIZER_H_
