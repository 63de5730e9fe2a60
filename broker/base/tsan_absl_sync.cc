// ThreadSanitizer build only (JOBWIRE_TSAN): makes the synchronisation of
// Debian's prebuilt abseil visible to TSan without rebuilding abseil.
//
// libabsl_synchronization is not instrumented: absl::Mutex hands over with
// futexes and atomics that TSan cannot see, so every value handed from one
// thread to another under an absl::Mutex (ours, and gRPC's: grpc_core::Mutex
// and gpr_mu are absl::Mutex in gRPC 1.51) looks like a data race. This file
// defines the exported absl::Mutex, absl::CondVar and absl::Notification entry
// points in the executable itself, which the dynamic linker binds ahead of the
// library's (for our calls and for every call from libgrpc). Each definition
// calls the library's own function (found with dlsym(RTLD_NEXT)) and adds the
// happens-before edge the real primitive provides:
//   - after any lock is taken (Lock, ReaderLock, a successful TryLock):
//     __tsan_acquire(mutex);
//   - before any lock is released (Unlock, ReaderUnlock): __tsan_release(mutex);
//   - around a CondVar wait, which drops and retakes the lock: release
//     before, acquire after;
//   - Notification: release before Notify, acquire after a wait that saw it.
// LockWhen and Await are rebuilt on top of those (see WaitUntil below).
// Lock-order (deadlock) detection is not provided; data-race detection on
// state guarded by these primitives is. Notification::HasBeenNotified() is
// inline in abseil's header and cannot be annotated here: code under test
// must wait with WaitForNotification*() before reading what Notify published.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define JOBWIRE_STR2(x) #x
#define JOBWIRE_STR(x) JOBWIRE_STR2(x)

// The mangled name of absl::<inline namespace>::<rest>, e.g. rest =
// "5Mutex4LockEv" for absl::Mutex::Lock(). `konst` adds the const qualifier.
std::string AbslSymbol(const char* rest, bool konst = false) {
  const std::string ns = JOBWIRE_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return std::string(konst ? "_ZNK4absl" : "_ZN4absl") + std::to_string(ns.size()) + ns + rest;
}

template <typename Fn>
Fn Real(const char* rest, bool konst = false) {
  const std::string name = AbslSymbol(rest, konst);
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found in the loaded abseil\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// Mutex: taking the lock.
void Mutex::Lock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}
void Mutex::ReaderLock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}
bool Mutex::TryLock() {
  static auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}
bool Mutex::ReaderTryLock() {
  static auto real = Real<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}
// Mutex: releasing the lock.
void Mutex::Unlock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}
void Mutex::ReaderUnlock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

// Mutex: waits for a Condition. abseil evaluates a waiter's Condition on
// whichever thread releases the lock, inside its Unlock, at points no wrapper
// can annotate, so these never hand a Condition to the library: they
// evaluate it on the waiting thread under the lock and, while it is false,
// drop the lock, sleep briefly (10 us doubling to 1 ms) and retake it. Slower
// than abseil's wake-ups, and only in the TSan build.
namespace {

// Takes `mu` (shared when `reader`) and waits until `cond` holds or
// `deadline` passes; returns whether `cond` held. Always returns with `mu`
// held. `locked` says whether the caller already holds it.
bool WaitUntil(Mutex* mu, const Condition& cond, Time deadline, bool reader, bool locked) {
  if (!locked) reader ? mu->ReaderLock() : mu->Lock();
  Duration pause = Microseconds(10);
  while (!cond.Eval()) {
    if (Now() >= deadline) return false;
    reader ? mu->ReaderUnlock() : mu->Unlock();
    SleepFor(pause);
    pause = std::min(pause * 2, Milliseconds(1));
    reader ? mu->ReaderLock() : mu->Lock();
  }
  return true;
}

}  // namespace

void Mutex::LockWhen(const Condition& cond) {
  WaitUntil(this, cond, InfiniteFuture(), /*reader=*/false, /*locked=*/false);
}
void Mutex::ReaderLockWhen(const Condition& cond) {
  WaitUntil(this, cond, InfiniteFuture(), /*reader=*/true, /*locked=*/false);
}
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  return WaitUntil(this, cond, Now() + timeout, /*reader=*/false, /*locked=*/false);
}
bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  return WaitUntil(this, cond, deadline, /*reader=*/false, /*locked=*/false);
}
bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  return WaitUntil(this, cond, Now() + timeout, /*reader=*/true, /*locked=*/false);
}
bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  return WaitUntil(this, cond, deadline, /*reader=*/true, /*locked=*/false);
}
// Await is called with the lock held exclusively (abseil's contract).
void Mutex::Await(const Condition& cond) {
  WaitUntil(this, cond, InfiniteFuture(), /*reader=*/false, /*locked=*/true);
}
bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  return WaitUntil(this, cond, Now() + timeout, /*reader=*/false, /*locked=*/true);
}
bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  return WaitUntil(this, cond, deadline, /*reader=*/false, /*locked=*/true);
}

// CondVar: the waits release and retake `mu`.
void CondVar::Wait(Mutex* mu) {
  static auto real = Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  real(this, mu);
  __tsan_acquire(mu);
}
bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static auto real = Real<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}
bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static auto real = Real<bool (*)(CondVar*, Mutex*, Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

// Notification: Notify publishes, a wait that saw it acquires.
void Notification::Notify() {
  static auto real = Real<void (*)(Notification*)>("12Notification6NotifyEv");
  __tsan_release(this);
  real(this);
}
void Notification::WaitForNotification() const {
  static auto real =
      Real<void (*)(const Notification*)>("12Notification19WaitForNotificationEv", /*konst=*/true);
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}
bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static auto real = Real<bool (*)(const Notification*, Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE", /*konst=*/true);
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}
bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static auto real = Real<bool (*)(const Notification*, Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE", /*konst=*/true);
  const bool notified = real(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
