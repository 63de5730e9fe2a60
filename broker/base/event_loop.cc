#include "broker/base/event_loop.h"

#include <event2/event.h>
#include <event2/thread.h>

#include <memory>

namespace jobwire::base {

struct EventLoop::Timer {
  EventLoop* loop;
  std::function<void()> fn;
  event* ev = nullptr;
};

void EventLoop::OnTimer(int, short, void* arg) {
  std::unique_ptr<Timer> timer(static_cast<Timer*>(arg));
  timer->loop->timers_.erase(timer.get());
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
  for (Timer* timer : timers_) {
    event_free(timer->ev);
    delete timer;
  }
  event_free(wake_);
  event_base_free(base_);
}

void EventLoop::Start() {
  thread_ = std::thread([this] { event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY); });
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

void EventLoop::RunAfter(absl::Duration delay, std::function<void()> fn) {
  Post([this, delay, fn = std::move(fn)]() mutable {
    auto* timer = new Timer{this, std::move(fn)};
    timer->ev = evtimer_new(base_, &OnTimer, timer);
    timers_.insert(timer);
    timeval tv = absl::ToTimeval(std::max(delay, absl::ZeroDuration()));
    evtimer_add(timer->ev, &tv);
  });
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
