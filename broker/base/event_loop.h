// EventLoop: one libevent loop on its own thread. All Redis I/O and all
// broker timers run on it, so their callbacks never run concurrently with
// each other.
#ifndef JOBWIRE_BROKER_BASE_EVENT_LOOP_H_
#define JOBWIRE_BROKER_BASE_EVENT_LOOP_H_

#include <deque>
#include <functional>
#include <thread>
#include <unordered_set>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

struct event;
struct event_base;

namespace jobwire::base {

// Thread safety: Post and RunAfter may be called from any thread; base() is
// for code that runs on the loop thread (hiredis attaches to it).
class EventLoop {
 public:
  EventLoop();
  ~EventLoop();  // Stops the loop; pending tasks and timers are dropped.
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Starts the loop thread. REQUIRES: called once.
  void Start();
  // Stops the loop thread and joins it. Idempotent.
  void Stop();

  // Runs `fn` on the loop thread, soon.
  void Post(std::function<void()> fn);
  // Runs `fn` on the loop thread after `delay`. There is no cancellation:
  // callers guard their state (for example with a weak_ptr or a generation).
  void RunAfter(absl::Duration delay, std::function<void()> fn);

  bool InLoopThread() const;
  event_base* base() const { return base_; }

 private:
  struct Timer;
  static void OnWake(int fd, short what, void* arg);
  static void OnTimer(int fd, short what, void* arg);
  void RunPosted();

  event_base* base_;
  event* wake_;
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  // Timers added and not fired yet (loop thread only; freed by the
  // destructor once the thread has stopped).
  std::unordered_set<Timer*> timers_;
};

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_EVENT_LOOP_H_
