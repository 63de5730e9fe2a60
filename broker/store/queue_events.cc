#include "broker/store/queue_events.h"

#include <msgpack.h>

#include "broker/store/msgpack_value.h"

namespace jobwire::store {

absl::StatusOr<std::vector<QueueEvent>> DecodeQueueEvents(absl::string_view message) {
  msgpack_unpacked unpacked;
  msgpack_unpacked_init(&unpacked);
  size_t offset = 0;
  std::vector<QueueEvent> events;
  bool ok = msgpack_unpack_next(&unpacked, message.data(), message.size(), &offset) ==
                MSGPACK_UNPACK_SUCCESS &&
            unpacked.data.type == MSGPACK_OBJECT_ARRAY;
  if (ok) {
    const msgpack_object_array& list = unpacked.data.via.array;
    events.reserve(list.size);
    for (uint32_t i = 0; ok && i < list.size; ++i) {
      const msgpack_object& e = list.ptr[i];
      ok = e.type == MSGPACK_OBJECT_ARRAY && e.via.array.size >= 2;
      if (!ok) break;
      const msgpack_object* v = e.via.array.ptr;
      const uint32_t n = e.via.array.size;
      QueueEvent event;
      event.kind = MsgpackText(v[0]);
      event.job_id = MsgpackText(v[1]);
      if (n > 2) event.type = MsgpackText(v[2]);
      if (n > 3) event.attempts = static_cast<int32_t>(MsgpackInt(v[3]));
      if (n > 4) event.at_ms = MsgpackInt(v[4]);
      if (n > 5 && v[5].type != MSGPACK_OBJECT_NIL) {
        event.percent = static_cast<int32_t>(MsgpackInt(v[5]));
      }
      events.push_back(std::move(event));
    }
  }
  msgpack_unpacked_destroy(&unpacked);
  if (!ok) return absl::InternalError("queue event message is not a msgpack array of events");
  return events;
}

}  // namespace jobwire::store
