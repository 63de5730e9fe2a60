// DecodeJobRecord and JobFromReply on records that Redis' own cmsgpack packed
// (EVAL on a real redis-server), table-driven: the shapes cmsgpack gives a
// record (an array without holes, a map with them), numbers as text and
// text as numbers, and damaged records.
#include "broker/store/job_record.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/redis_server.h"

namespace jobwire::store {
namespace {

class JobRecordTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(redis_.Start().ok()); }

  // The bytes Redis' cmsgpack.pack gives the Lua expression `table`.
  std::string Pack(const std::string& table) {
    absl::StatusOr<testing::RedisReply> reply =
        redis_.CommandArgv({"EVAL", "return cmsgpack.pack(" + table + ")", "0"});
    EXPECT_TRUE(reply.ok()) << reply.status();
    if (!reply.ok()) return "";
    EXPECT_FALSE(reply->is_error()) << table << ": " << reply->str;
    return reply->str;
  }

  testing::RedisServer redis_;
};

struct Case {
  const char* name;
  const char* table;  // a Lua expression, as lua/_lib.lua's job_write packs it
  bool decodes;
  const char* want;  // the Job's text format after decoding (fields in the .proto's order)
  const char* lease_token;
};

TEST_F(JobRecordTest, DecodesWhatCmsgpackPacks) {
  const std::vector<Case> cases = {
      {"array without holes (fields 1..12)",
       "{'active', 'email', -5, 2, 3, 1764800000000, 'c1.1', 1764800030000, 'w-1', 'boom', "
       "'key-1', 1764799999000}",
       true,
       "type: \"email\" priority: -5 state: JOB_STATE_ACTIVE attempts: 2 max_attempts: 3 "
       "available_at_ms: 1764800000000 lease_expires_at_ms: 1764800030000 error: \"boom\" "
       "idempotency_key: \"key-1\" created_at_ms: 1764799999000 worker_id: \"w-1\"",
       "c1.1"},
      {"map with holes, fields a Job does not show",
       "(function() local t = {} t[1] = 'completed' t[2] = 'x' t[13] = 1764800000500 "
       "t[14] = 1000 t[15] = 60000 t[16] = 86400000 t[17] = '' return t end)()",
       true,
       "type: \"x\" state: JOB_STATE_COMPLETED finished_at_ms: 1764800000500 "
       "backoff_base_ms: 1000 backoff_max_ms: 60000",
       ""},
      {"numbers as text, text as numbers, a fraction",
       "(function() local t = {} t[1] = 'pending' t[3] = 1000.75 t[4] = '7' t[9] = 42 "
       "return t end)()",
       true, "priority: 1000 state: JOB_STATE_PENDING attempts: 7 worker_id: \"42\"", ""},
      {"an unknown state", "{'sleeping'}", true, "", ""},
      {"not a table", "12", false, "", ""},
      {"a string", "'pending'", false, "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    v1::Job job;
    std::string token = "before";
    EXPECT_EQ(DecodeJobRecord(Pack(c.table), &job, &token), c.decodes);
    EXPECT_EQ(job.ShortDebugString(), c.want);
    EXPECT_EQ(token, c.decodes ? c.lease_token : "before");
  }
}

TEST_F(JobRecordTest, BytesThatAreNotMsgpackDoNotDecode) {
  v1::Job job;
  job.set_type("kept");
  EXPECT_FALSE(DecodeJobRecord("", &job, nullptr));
  EXPECT_FALSE(DecodeJobRecord("\xc1", &job, nullptr));        // a byte msgpack never uses
  EXPECT_FALSE(DecodeJobRecord("\x93\x01", &job, nullptr));    // an array cut short
  EXPECT_EQ(job.ShortDebugString(), "type: \"kept\"");
}

TEST_F(JobRecordTest, JobFromReplyTakesPayloadAndResult) {
  RedisReply reply;
  reply.type = RedisReply::Type::kArray;
  reply.elements.resize(3);
  reply.elements[0].type = RedisReply::Type::kString;
  reply.elements[0].str = Pack("{'completed', 'email'}");
  reply.elements[1].type = RedisReply::Type::kString;
  reply.elements[1].str = "{\"to\":1}";
  reply.elements[2].type = RedisReply::Type::kString;
  reply.elements[2].str = "done";
  std::string token = "x";
  EXPECT_EQ(JobFromReply("q", "000000000001", reply, &token).ShortDebugString(),
            "id: \"000000000001\" queue: \"q\" type: \"email\" payload: \"{\\\"to\\\":1}\" "
            "state: JOB_STATE_COMPLETED result: \"done\"");
  EXPECT_EQ(token, "");

  // Another shape: the id and queue only.
  reply.elements.pop_back();
  EXPECT_EQ(JobFromReply("q", "7", reply, &token).ShortDebugString(), "id: \"7\" queue: \"q\"");
}

}  // namespace
}  // namespace jobwire::store
