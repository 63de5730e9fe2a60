#include "broker/store/job_record.h"

#include <msgpack.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "broker/store/msgpack_value.h"

namespace jobwire::store {
namespace {

// Field numbers of a record: JOB_FIELDS in lua/_lib.lua (field i is number
// i). Only those a Job shows, and the lease token.
enum JobField : int64_t {
  kState = 1,
  kType = 2,
  kPriority = 3,
  kAttempts = 4,
  kMaxAttempts = 5,
  kAvailableAt = 6,
  kLeaseToken = 7,
  kLeaseExpiresAt = 8,
  kWorkerId = 9,
  kError = 10,
  kIdempotencyKey = 11,
  kCreatedAt = 12,
  kFinishedAt = 13,
  kBackoffBase = 14,
  kBackoffMax = 15,
  kTimeout = 20,
  kRunDeadline = 21,
  kCancelRequested = 22,
  kProgressPercent = 23,
  kProgressData = 24,
  kHeaders = 25,
  kConcurrencyKey = 26,
  kErrors = 27,
  kDependsOn = 28,
  kDepsLeft = 29,
  kDepPolicy = 30,
  kDepResults = 31,
};

// Calls fn with the one msgpack value `packed` holds when it unpacks to a
// value of `type`; does nothing otherwise.
template <typename Fn>
void WithUnpacked(absl::string_view packed, msgpack_object_type type, Fn fn) {
  msgpack_unpacked unpacked;
  msgpack_unpacked_init(&unpacked);
  size_t offset = 0;
  if (msgpack_unpack_next(&unpacked, packed.data(), packed.size(), &offset) ==
          MSGPACK_UNPACK_SUCCESS &&
      unpacked.data.type == type) {
    fn(unpacked.data);
  }
  msgpack_unpacked_destroy(&unpacked);
}

// Fills `out` from a packed map of strings (job->headers from PackHeaders;
// job->dependency_results from dep_result_add in lua/_lib_deps.lua: parent
// id -> result); anything else is ignored (a damaged field shows nothing).
void SetStringMap(absl::string_view packed, google::protobuf::Map<std::string, std::string>* out) {
  WithUnpacked(packed, MSGPACK_OBJECT_MAP, [out](const msgpack_object& root) {
    for (uint32_t i = 0; i < root.via.map.size; ++i) {
      (*out)[MsgpackText(root.via.map.ptr[i].key)] = MsgpackText(root.via.map.ptr[i].val);
    }
  });
}

// Adds job->errors from a packed error history (error_note in lua/_lib.lua:
// an array of {attempt, at ms, error}); an entry of another shape is
// skipped, a history that does not unpack shows none.
void SetErrors(absl::string_view packed, v1::Job* job) {
  WithUnpacked(packed, MSGPACK_OBJECT_ARRAY, [job](const msgpack_object& root) {
    for (uint32_t i = 0; i < root.via.array.size; ++i) {
      const msgpack_object& entry = root.via.array.ptr[i];
      if (entry.type != MSGPACK_OBJECT_ARRAY || entry.via.array.size != 3) continue;
      v1::JobError* e = job->add_errors();
      e->set_attempt(static_cast<int32_t>(MsgpackInt(entry.via.array.ptr[0])));
      e->set_at_ms(MsgpackInt(entry.via.array.ptr[1]));
      e->set_error(MsgpackText(entry.via.array.ptr[2]));
    }
  });
}

v1::JobState ParseState(absl::string_view s) {
  if (s == "pending") return v1::JOB_STATE_PENDING;
  if (s == "active") return v1::JOB_STATE_ACTIVE;
  if (s == "completed") return v1::JOB_STATE_COMPLETED;
  if (s == "dead") return v1::JOB_STATE_DEAD;
  return v1::JOB_STATE_UNSPECIFIED;
}

void SetField(int64_t number, const msgpack_object& v, v1::Job* job, std::string* lease_token) {
  if (v.type == MSGPACK_OBJECT_NIL) return;
  switch (number) {
    case kState: job->set_state(ParseState(MsgpackText(v))); break;
    case kType: job->set_type(MsgpackText(v)); break;
    case kPriority: job->set_priority(static_cast<int32_t>(MsgpackInt(v))); break;
    case kAttempts: job->set_attempts(static_cast<int32_t>(MsgpackInt(v))); break;
    case kMaxAttempts: job->set_max_attempts(static_cast<int32_t>(MsgpackInt(v))); break;
    case kAvailableAt: job->set_available_at_ms(MsgpackInt(v)); break;
    case kLeaseToken:
      if (lease_token != nullptr) *lease_token = MsgpackText(v);
      break;
    case kLeaseExpiresAt: job->set_lease_expires_at_ms(MsgpackInt(v)); break;
    case kWorkerId: job->set_worker_id(MsgpackText(v)); break;
    case kError: job->set_error(MsgpackText(v)); break;
    case kIdempotencyKey: job->set_idempotency_key(MsgpackText(v)); break;
    case kCreatedAt: job->set_created_at_ms(MsgpackInt(v)); break;
    case kFinishedAt: job->set_finished_at_ms(MsgpackInt(v)); break;
    case kBackoffBase: job->set_backoff_base_ms(MsgpackInt(v)); break;
    case kBackoffMax: job->set_backoff_max_ms(MsgpackInt(v)); break;
    case kTimeout: job->set_timeout_ms(MsgpackInt(v)); break;
    case kRunDeadline: job->set_run_deadline_ms(MsgpackInt(v)); break;
    case kCancelRequested: job->set_cancel_requested_at_ms(MsgpackInt(v)); break;
    case kProgressPercent:
      job->set_progress_percent(static_cast<int32_t>(MsgpackInt(v)));
      break;
    case kProgressData: job->set_progress_data(MsgpackText(v)); break;
    case kHeaders: SetStringMap(MsgpackText(v), job->mutable_headers()); break;
    case kConcurrencyKey: job->set_concurrency_key(MsgpackText(v)); break;
    case kErrors: SetErrors(MsgpackText(v), job); break;
    case kDependsOn:
      for (absl::string_view id : absl::StrSplit(MsgpackText(v), ' ', absl::SkipEmpty())) {
        job->add_depends_on(std::string(id));
      }
      break;
    case kDepsLeft: job->set_dependencies_left(static_cast<int32_t>(MsgpackInt(v))); break;
    case kDepPolicy: job->set_run_after_failed_dependency(MsgpackText(v) == "run"); break;
    case kDepResults: SetStringMap(MsgpackText(v), job->mutable_dependency_results()); break;
    default: break;  // fields a Job does not show
  }
}

}  // namespace

std::string PackHeaders(const google::protobuf::Map<std::string, std::string>& headers) {
  if (headers.empty()) return "";
  std::vector<std::pair<absl::string_view, absl::string_view>> sorted(headers.begin(),
                                                                       headers.end());
  std::sort(sorted.begin(), sorted.end());
  msgpack_sbuffer buffer;
  msgpack_sbuffer_init(&buffer);
  msgpack_packer packer;
  msgpack_packer_init(&packer, &buffer, msgpack_sbuffer_write);
  msgpack_pack_map(&packer, sorted.size());
  for (const auto& [key, value] : sorted) {
    msgpack_pack_str(&packer, key.size());
    msgpack_pack_str_body(&packer, key.data(), key.size());
    msgpack_pack_str(&packer, value.size());
    msgpack_pack_str_body(&packer, value.data(), value.size());
  }
  std::string out(buffer.data, buffer.size);
  msgpack_sbuffer_destroy(&buffer);
  return out;
}

bool DecodeJobRecord(absl::string_view packed, v1::Job* job, std::string* lease_token) {
  msgpack_unpacked unpacked;
  msgpack_unpacked_init(&unpacked);
  size_t offset = 0;
  bool ok = msgpack_unpack_next(&unpacked, packed.data(), packed.size(), &offset) ==
            MSGPACK_UNPACK_SUCCESS;
  const msgpack_object& root = unpacked.data;
  ok = ok && (root.type == MSGPACK_OBJECT_MAP || root.type == MSGPACK_OBJECT_ARRAY);
  if (ok) {
    if (lease_token != nullptr) lease_token->clear();
    if (root.type == MSGPACK_OBJECT_ARRAY) {
      // A record without holes: cmsgpack packs it as an array, field i + 1
      // at index i.
      for (uint32_t i = 0; i < root.via.array.size; ++i) {
        SetField(i + 1, root.via.array.ptr[i], job, lease_token);
      }
    } else {
      for (uint32_t i = 0; i < root.via.map.size; ++i) {
        const msgpack_object_kv& kv = root.via.map.ptr[i];
        SetField(MsgpackInt(kv.key), kv.val, job, lease_token);
      }
    }
  }
  msgpack_unpacked_destroy(&unpacked);
  return ok;
}

v1::Job JobFromReply(const std::string& queue, const std::string& id, const RedisReply& reply,
                     std::string* lease_token) {
  v1::Job job;
  job.set_id(id);
  job.set_queue(queue);
  if (lease_token != nullptr) lease_token->clear();
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() != 3) return job;
  DecodeJobRecord(reply.elements[0].str, &job, lease_token);
  job.set_payload(reply.elements[1].str);
  job.set_result(reply.elements[2].str);
  return job;
}

}  // namespace jobwire::store
