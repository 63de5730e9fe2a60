#include "broker/store/redis_reply.h"

#include <hiredis/hiredis.h>

#include "absl/strings/numbers.h"

namespace jobwire::store {

RedisReply RedisReply::FromHiredis(const redisReply& r) {
  RedisReply out;
  switch (r.type) {
    case REDIS_REPLY_STRING:
      out.type = Type::kString;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Type::kStatus;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Type::kError;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Type::kInteger;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Type::kArray;
      out.elements.reserve(r.elements);
      for (size_t i = 0; i < r.elements; ++i) out.elements.push_back(FromHiredis(*r.element[i]));
      break;
    default:
      out.type = Type::kNil;
  }
  return out;
}

int64_t RedisReply::AsInt(int64_t fallback) const {
  if (type == Type::kInteger) return integer;
  int64_t value;
  if (type == Type::kString && absl::SimpleAtoi(str, &value)) return value;
  return fallback;
}

}  // namespace jobwire::store
