// EventLoop: one libevent loop on its own thread. All Redis I/O and all
// broker timers run on it, so their callbacks never run concurrently with
// each other. Timers are cancellable: a cancelled timer's callback (and
// whatever it captured) is freed at once, so pending timers never outnumber
// the ones their owners still want.
#ifndef JOBWIRE_BROKER_BASE_EVENT_LOOP_H_
#define JOBWIRE_BROKER_BASE_EVENT_LOOP_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "absl/container/flat_hash_map.h"

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

struct event;
struct event_base;

namespace jobwire::base {

// Thread safety: Post, RunAfter, Cancel and pending_timers may be called
// from any thread; base() is for code that runs on the loop thread (hiredis
// attaches to it).
class EventLoop {
 public:
  // Names a timer from RunAfter. 0 names none (Cancel(0) does nothing).
  using TimerId = uint64_t;
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
  // Runs `fn` at once when called on the loop thread, else Post(fn).
  void RunInLoop(std::function<void()> fn);
  // Runs `fn` on the loop thread after `delay` (at once when not positive),
  // unless cancelled first. Returns the timer's id (never 0).
  TimerId RunAfter(absl::Duration delay, std::function<void()> fn);
  // Cancels timer `id`: its callback never runs and is destroyed on the loop
  // thread (at once when called there, else soon). No-op when the timer has
  // fired or was cancelled already. Called on the loop thread from a timer
  // callback, it may cancel any other timer.
  void Cancel(TimerId id);
  // Timers armed and neither fired nor cancelled (for tests and metrics).
  int64_t pending_timers() const { return pending_timers_.load(); }

  bool InLoopThread() const;
  event_base* base() const { return base_; }

 private:
  struct Timer;
  static void OnWake(int fd, short what, void* arg);
  static void OnTimer(int fd, short what, void* arg);
  void RunPosted();
  // Loop thread only.
  void Arm(TimerId id, absl::Duration delay, std::function<void()> fn);
  void Disarm(TimerId id);

  event_base* base_;
  event* wake_;
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  std::atomic<TimerId> next_timer_id_{1};
  std::atomic<int64_t> pending_timers_{0};
  // Loop thread only: timers armed and not fired yet, by id (freed by the
  // destructor once the thread has stopped).
  absl::flat_hash_map<TimerId, Timer*> timers_;
};

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_EVENT_LOOP_H_
