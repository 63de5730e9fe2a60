// RedisReply: an owned copy of one hiredis reply (hiredis frees its own
// replies as soon as the callback returns).
#ifndef JOBWIRE_BROKER_STORE_REDIS_REPLY_H_
#define JOBWIRE_BROKER_STORE_REDIS_REPLY_H_

#include <cstdint>
#include <string>
#include <vector>

struct redisReply;

namespace jobwire::store {

struct RedisReply {
  enum class Type { kNil, kString, kStatus, kError, kInteger, kArray };

  static RedisReply FromHiredis(const redisReply& reply);

  bool is_error() const { return type == Type::kError; }
  bool is_nil() const { return type == Type::kNil; }
  // The integer value of an integer reply, or of a string that holds one;
  // `fallback` otherwise.
  int64_t AsInt(int64_t fallback = 0) const;

  Type type = Type::kNil;
  std::string str;  // kString, kStatus, kError
  int64_t integer = 0;
  std::vector<RedisReply> elements;  // kArray
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_REPLY_H_
