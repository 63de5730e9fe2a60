// SubscribeReactor: the server side of one Subscribe stream (completion-queue
// API). It subscribes through core::EventFeed and writes each message the
// feed hands it, one at a time, keeping the rest in order behind the message
// being written. When more than `max_buffered_events` events (a message
// without events counts as one) wait behind it, the client reads too slowly:
// the stream ends with RESOURCE_EXHAUSTED (SUBSCRIBER_TOO_SLOW) instead of
// buffering without bound. Otherwise the stream ends only with the feed's
// error (UNAVAILABLE), or CANCELLED when the client goes away.
//
// Lifetime: gRPC owns the reactor until OnDone, which ends the subscription
// and deletes it. The Stream shared with the feed's sink outlives it and
// drops messages once the reactor is gone.
#ifndef JOBWIRE_BROKER_SERVICE_SUBSCRIBE_REACTOR_H_
#define JOBWIRE_BROKER_SERVICE_SUBSCRIBE_REACTOR_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "broker/core/event_feed.h"
#include "broker/service/cq_reactors.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::service {

class SubscribeReactor : public WriteReactor<v1::SubscribeResponse> {
 public:
  // `feed` must outlive the stream.
  SubscribeReactor(core::EventFeed* feed, int64_t max_buffered_events);

  // Subscribes for `request`, or ends the stream with `refused` when it is
  // an error (the request was invalid or not permitted). Call once, right
  // after construction.
  void Start(const v1::SubscribeRequest& request, const absl::Status& refused);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  class Stream {
   public:
    Stream(SubscribeReactor* reactor, int64_t max_buffered_events)
        : reactor_(reactor), max_buffered_events_(max_buffered_events) {}
    // The feed's sink: a message to write, or the error that ends the stream.
    void Send(absl::StatusOr<v1::SubscribeResponse> message);
    void WriteDone(bool ok);
    // Ends the stream with `status` once (no-op afterwards).
    void Finish(const grpc::Status& status);
    // After OnDone: messages are dropped.
    void Detach();

   private:
    void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
    void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

    absl::Mutex mu_;
    SubscribeReactor* reactor_ ABSL_GUARDED_BY(mu_);
    const int64_t max_buffered_events_;
    v1::SubscribeResponse message_ ABSL_GUARDED_BY(mu_);  // being written
    bool writing_ ABSL_GUARDED_BY(mu_) = false;
    bool finished_ ABSL_GUARDED_BY(mu_) = false;
    std::deque<v1::SubscribeResponse> queued_ ABSL_GUARDED_BY(mu_);
    int64_t queued_events_ ABSL_GUARDED_BY(mu_) = 0;
    // The status to end with once the queued messages are written.
    std::optional<grpc::Status> end_ ABSL_GUARDED_BY(mu_);
  };

  core::EventFeed* const feed_;
  std::shared_ptr<Stream> stream_;
  std::optional<core::EventFeed::SubscriptionId> subscription_;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_SUBSCRIBE_REACTOR_H_
