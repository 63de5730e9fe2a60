// redis_raw_ceiling: the raw Redis ceiling of the side-by-side benchmark
// (bench/README.md). Not jobwire's scripts: the least a job queue can ask of
// Redis per job, three small scripts,
//   enqueue  INCR the id, HSET the job's payload and state, ZADD it pending
//   claim    ZPOPMIN one pending, ZADD it to the active set, HSET its state,
//            HGET its payload
//   ack      ZREM it from the active set, DEL the job
// run by --connections hiredis connections (one thread each), --pipeline
// calls written before the replies are read. Each connection loops: a
// pipeline of enqueues (while jobs remain to enqueue), a pipeline of claims,
// then one ack per job it claimed, until --jobs jobs are acked in all.
//
//   redis_raw_ceiling --redis_url=redis://127.0.0.1:6379 --jobs=50000
//
// Prints one JSON object: jobs, seconds, jobs_per_s.
#include <hiredis/hiredis.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, host, "127.0.0.1", "Redis host");
ABSL_FLAG(int, port, 6379, "Redis port");
ABSL_FLAG(int64_t, jobs, 50000, "jobs to enqueue, claim and ack");
ABSL_FLAG(int, connections, 4, "hiredis connections, one thread each");
ABSL_FLAG(int, pipeline, 64, "calls written before their replies are read");

namespace {

constexpr char kEnqueue[] = R"(
local id = redis.call('INCR', KEYS[1])
local job = KEYS[3] .. id
redis.call('HSET', job, 'payload', ARGV[1], 'state', 'pending')
redis.call('ZADD', KEYS[2], id, id)
return id)";
constexpr char kClaim[] = R"(
local top = redis.call('ZPOPMIN', KEYS[1])
if #top == 0 then return false end
local id = top[1]
redis.call('ZADD', KEYS[2], ARGV[1], id)
redis.call('HSET', KEYS[3] .. id, 'state', 'active')
return {id, redis.call('HGET', KEYS[3] .. id, 'payload')})";
constexpr char kAck[] = R"(
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('DEL', KEYS[2] .. ARGV[1]))";

const std::string kPayload(64, 'x');

struct Shared {
  int64_t jobs;
  std::atomic<int64_t> to_enqueue;
  std::atomic<int64_t> acked{0};
  std::string enqueue_sha, claim_sha, ack_sha;
};

std::string Load(redisContext* c, const char* script) {
  auto* reply = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %s", script));
  std::string sha = reply && reply->type == REDIS_REPLY_STRING ? reply->str : "";
  freeReplyObject(reply);
  return sha;
}

// Reads `n` replies; returns the number that were errors. `each` sees every
// reply that is not one.
template <typename F>
int ReadReplies(redisContext* c, int n, F each) {
  int errors = 0;
  for (int i = 0; i < n; ++i) {
    void* raw = nullptr;
    if (redisGetReply(c, &raw) != REDIS_OK) return n;
    auto* reply = static_cast<redisReply*>(raw);
    if (reply->type == REDIS_REPLY_ERROR) {
      std::cerr << reply->str << "\n";
      ++errors;
    } else {
      each(reply);
    }
    freeReplyObject(reply);
  }
  return errors;
}

// One connection's loop; returns the number of error replies.
int Drive(Shared* shared) {
  redisContext* c = redisConnect(absl::GetFlag(FLAGS_host).c_str(), absl::GetFlag(FLAGS_port));
  if (c == nullptr || c->err) return 1;
  const int pipeline = absl::GetFlag(FLAGS_pipeline);
  int errors = 0;
  std::vector<std::string> claimed;
  while (shared->acked.load() < shared->jobs) {
    int64_t take = std::min<int64_t>(pipeline, std::max<int64_t>(
                                                   0, shared->to_enqueue.fetch_sub(pipeline)));
    for (int64_t i = 0; i < take; ++i) {
      redisAppendCommand(c, "EVALSHA %s 3 raw:seq raw:pending raw:job: %b",
                         shared->enqueue_sha.c_str(), kPayload.data(), kPayload.size());
    }
    errors += ReadReplies(c, static_cast<int>(take), [](redisReply*) {});
    const std::string deadline = absl::StrCat(absl::ToUnixMillis(absl::Now()) + 30000);
    for (int i = 0; i < pipeline; ++i) {
      redisAppendCommand(c, "EVALSHA %s 3 raw:pending raw:active raw:job: %s",
                         shared->claim_sha.c_str(), deadline.c_str());
    }
    claimed.clear();
    errors += ReadReplies(c, pipeline, [&claimed](redisReply* reply) {
      if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2) {
        claimed.emplace_back(reply->element[0]->str, reply->element[0]->len);
      }
    });
    for (const std::string& id : claimed) {
      redisAppendCommand(c, "EVALSHA %s 2 raw:active raw:job: %s", shared->ack_sha.c_str(),
                         id.c_str());
    }
    errors += ReadReplies(c, static_cast<int>(claimed.size()), [](redisReply*) {});
    shared->acked += static_cast<int64_t>(claimed.size());
    if (errors > 0) break;
  }
  redisFree(c);
  return errors;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  Shared shared;
  shared.jobs = absl::GetFlag(FLAGS_jobs);
  shared.to_enqueue = shared.jobs;
  redisContext* setup = redisConnect(absl::GetFlag(FLAGS_host).c_str(), absl::GetFlag(FLAGS_port));
  if (setup == nullptr || setup->err) {
    std::cout << nlohmann::json{{"error", "cannot connect"}}.dump() << std::endl;
    return 1;
  }
  shared.enqueue_sha = Load(setup, kEnqueue);
  shared.claim_sha = Load(setup, kClaim);
  shared.ack_sha = Load(setup, kAck);
  redisFree(setup);

  std::atomic<int> errors{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < absl::GetFlag(FLAGS_connections); ++i) {
    threads.emplace_back([&] { errors += Drive(&shared); });
  }
  for (auto& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json out{{"system", "redis-raw-ceiling"},
                     {"jobs", shared.acked.load()},
                     {"seconds", seconds},
                     {"jobs_per_s", shared.acked.load() / seconds},
                     {"connections", absl::GetFlag(FLAGS_connections)},
                     {"pipeline", absl::GetFlag(FLAGS_pipeline)}};
  if (errors > 0) out["error"] = absl::StrCat(errors.load(), " error replies");
  std::cout << out.dump() << std::endl;
  return errors > 0 ? 1 : 0;
}
