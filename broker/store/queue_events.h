// Queue events: what the scripts publish on a queue's events channel
// (Keys::EventsChannel) while a broker listens: one message per script call,
// a cmsgpack array of events, each {kind, id, type, attempts, at_ms} and,
// for 'progress', the percent reported (absent when none)
// (events_open / event / events_publish in lua/_lib.lua; docs/redis-layout.md,
// "Events"). A script publishes only while the queue's listen mark is in the
// future (JobStore::ListenEvents, which core::QueueEventHub renews for the
// queues it follows); the scripts read it with the job records they read
// anyway, so a queue nobody follows pays no command for its events.
#ifndef JOBWIRE_BROKER_STORE_QUEUE_EVENTS_H_
#define JOBWIRE_BROKER_STORE_QUEUE_EVENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwire::store {

struct QueueEvent {
  // enqueued, active, completed, retry, dead, cancelled, lease_expired,
  // released, redriven, deleted, progress, cancel_requested, timed_out.
  std::string kind;
  // The job's id; "" for an event of the whole queue (delete_queue.lua's
  // "deleted").
  std::string job_id;
  std::string type;
  // The job's attempts after the change.
  int32_t attempts = 0;
  // When it happened, Redis ms.
  int64_t at_ms = 0;
  // progress: the percent reported, -1 when the report had none.
  int32_t percent = -1;
};

// The events of one message. INTERNAL when it is not a msgpack array of
// arrays of at least two values (nothing the scripts publish); missing
// trailing values read as empty / 0.
absl::StatusOr<std::vector<QueueEvent>> DecodeQueueEvents(absl::string_view message);

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_QUEUE_EVENTS_H_
