// Job records as the scripts answer them. A script that returns a job
// (claim.lua, get_job.lua, list_jobs.lua) answers {record, payload, result}
// (job_reply in lua/_lib.lua): the record is the job's small fields exactly
// as stored, a cmsgpack table indexed by field number (docs/redis-layout.md,
// "Job records"), which the broker decodes here rather than having Lua
// format every field as text.
#ifndef JOBWIRE_BROKER_STORE_JOB_RECORD_H_
#define JOBWIRE_BROKER_STORE_JOB_RECORD_H_

#include <string>

#include "absl/strings/string_view.h"
#include "broker/store/redis_reply.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::store {

// Sets the fields of `job` that the packed record `packed` holds (fields it
// lacks are left as they are) and, when `lease_token` is not null, the
// record's lease token ("" when it has none). Numbers stored as text are
// read as numbers, numbers in a text field as decimal text. Returns false
// when `packed` is not a msgpack map or array (a damaged record: the scripts
// read one as a record lacking every field); `job` is then unchanged.
bool DecodeJobRecord(absl::string_view packed, v1::Job* job, std::string* lease_token);

// A job's headers as its record stores them (field `headers`, set by
// enqueue.lua from this): a msgpack map of strings, keys sorted; "" when
// there are none.
std::string PackHeaders(const google::protobuf::Map<std::string, std::string>& headers);

// The Job that `reply` ({record, payload, result}, job_reply) describes, as
// job `id` of `queue`; `lease_token` as for DecodeJobRecord. A reply of
// another shape gives a Job with only the id and queue.
v1::Job JobFromReply(const std::string& queue, const std::string& id, const RedisReply& reply,
                     std::string* lease_token = nullptr);

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_JOB_RECORD_H_
