#include "broker/base/event_loop.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>

#include <memory>

namespace jobwire::base {

struct EventLoop::Timer {
  EventLoop* loop;
  TimerId id;
  std::function<void()> fn;
  event* ev = nullptr;
};

void EventLoop::OnTimer(int, short, void* arg) {
  std::unique_ptr<Timer> timer(static_cast<Timer*>(arg));
  timer->loop->timers_.erase(timer->id);
  --timer->loop->pending_timers_;
  event_free(timer->ev);
  timer->fn();
}

EventLoop::EventLoop() {
  static const int kThreadsEnabled = evthread_use_pthreads();
  (void)kThreadsEnabled;
  base_ = event_base_new();
  // Never added: Post() triggers it with event_active() from any thread, and
  // EVLOOP_NO_EXIT_ON_EMPTY keeps the loop running while nothing is pending.
  wake_ = event_new(base_, -1, 0, &EventLoop::OnWake, this);
}

EventLoop::~EventLoop() {
  Stop();
  for (auto& [id, timer] : timers_) {
    event_free(timer->ev);
    delete timer;
  }
  event_free(wake_);
  event_base_free(base_);
}

void EventLoop::Start() {
  thread_ = std::thread([this] { event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY); });
  // Named for top, perf and /proc/<pid>/task/*/comm (bench/side_by_side.py
  // counts each thread's context switches by name).
  pthread_setname_np(thread_.native_handle(), "jw-loop");
}

void EventLoop::Stop() {
  if (!thread_.joinable()) return;
  event_base_loopbreak(base_);
  thread_.join();
}

void EventLoop::Post(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    posted_.push_back(std::move(fn));
  }
  event_active(wake_, EV_TIMEOUT, 0);
}

EventLoop::TimerId EventLoop::RunAfter(absl::Duration delay, std::function<void()> fn) {
  const TimerId id = next_timer_id_++;
  ++pending_timers_;
  if (InLoopThread()) {
    Arm(id, delay, std::move(fn));
  } else {
    Post([this, id, delay, fn = std::move(fn)]() mutable { Arm(id, delay, std::move(fn)); });
  }
  return id;
}

void EventLoop::Cancel(TimerId id) {
  if (id == 0) return;
  if (InLoopThread() && timers_.contains(id)) {
    Disarm(id);
  } else {
    // Posted after the Arm of a RunAfter from another thread that may still
    // be waiting in posted_ (posts run in order); finds nothing when the
    // timer fired meanwhile.
    Post([this, id] { Disarm(id); });
  }
}

void EventLoop::Arm(TimerId id, absl::Duration delay, std::function<void()> fn) {
  auto* timer = new Timer{this, id, std::move(fn)};
  timer->ev = evtimer_new(base_, &OnTimer, timer);
  timers_[id] = timer;
  timeval tv = absl::ToTimeval(std::max(delay, absl::ZeroDuration()));
  evtimer_add(timer->ev, &tv);
}

void EventLoop::Disarm(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;  // fired or cancelled already
  Timer* timer = it->second;
  timers_.erase(it);
  --pending_timers_;
  event_free(timer->ev);
  delete timer;
}

void EventLoop::RunInLoop(std::function<void()> fn) {
  if (InLoopThread()) {
    fn();
  } else {
    Post(std::move(fn));
  }
}

bool EventLoop::InLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }

void EventLoop::OnWake(int, short, void* arg) { static_cast<EventLoop*>(arg)->RunPosted(); }

void EventLoop::RunPosted() {
  std::deque<std::function<void()>> batch;
  {
    absl::MutexLock lock(&mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) fn();
}

}  // namespace jobwire::base
