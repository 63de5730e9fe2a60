#include "broker/store/msgpack_value.h"

#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace jobwire::store {

int64_t MsgpackInt(const msgpack_object& o) {
  switch (o.type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
      return o.via.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(o.via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
      return o.via.i64;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
      if (!std::isfinite(o.via.f64) || std::fabs(o.via.f64) >= 9.2e18) return 0;
      return static_cast<int64_t>(o.via.f64);
    case MSGPACK_OBJECT_STR:
    case MSGPACK_OBJECT_BIN: {
      int64_t v = 0;
      const char* p = o.type == MSGPACK_OBJECT_STR ? o.via.str.ptr : o.via.bin.ptr;
      const uint32_t n = o.type == MSGPACK_OBJECT_STR ? o.via.str.size : o.via.bin.size;
      return absl::SimpleAtoi(absl::string_view(p, n), &v) ? v : 0;
    }
    default:
      return 0;
  }
}

std::string MsgpackText(const msgpack_object& o) {
  switch (o.type) {
    case MSGPACK_OBJECT_STR:
      return std::string(o.via.str.ptr, o.via.str.size);
    case MSGPACK_OBJECT_BIN:
      return std::string(o.via.bin.ptr, o.via.bin.size);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
      return absl::StrCat(MsgpackInt(o));
    case MSGPACK_OBJECT_BOOLEAN:
      return o.via.boolean ? "true" : "false";
    default:
      return "";
  }
}

}  // namespace jobwire::store
