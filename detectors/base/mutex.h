#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "detectors/base/thread_annotations.h"

namespace fraud::base {

// std::mutex with clang's thread-safety attributes: members declared FRAUD_GUARDED_BY(mu_) and
// functions declared FRAUD_REQUIRES(mu_) are checked against the places that lock it
// (Envoy's Thread::MutexBasicLockable, Abseil's Mutex). Same cost as std::mutex.
class FRAUD_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() FRAUD_ACQUIRE() { mu_.lock(); }
  void unlock() FRAUD_RELEASE() { mu_.unlock(); }
  [[nodiscard]] bool try_lock() FRAUD_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock where it cannot see it (a callback the lock's
  // holder runs); checks nothing at run time.
  void assertHeld() const FRAUD_ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; waits on condition variables with it. A wait takes no predicate:
// the caller loops on its condition itself, in its own scope, where the analysis sees the lock
// held while the condition reads guarded members:
//
//   MutexLock lock(mu_);
//   while (!ready_) lock.wait(cv_);
class FRAUD_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) FRAUD_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() FRAUD_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Lets the lock go while the caller does something slow, and takes it again.
  void unlock() FRAUD_RELEASE() { lock_.unlock(); }
  void lock() FRAUD_ACQUIRE() { lock_.lock(); }

  // Blocks until notified (or woken spuriously); the lock is held again on return.
  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  // As wait(), or until `deadline`: false when the deadline passed.
  template <class Clock, class Duration>
  bool waitUntil(std::condition_variable& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline) == std::cv_status::no_timeout;
  }
  // As wait(), or for `timeout`: false when it passed.
  template <class Rep, class Period>
  bool waitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout) {
    return cv.wait_for(lock_, timeout) == std::cv_status::no_timeout;
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// std::shared_mutex with the attributes: writers hold it exclusively (WriterMutexLock), readers
// shared (ReaderMutexLock); a member FRAUD_GUARDED_BY it is read under either, written under the
// first.
class FRAUD_CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() FRAUD_ACQUIRE() { mu_.lock(); }
  void unlock() FRAUD_RELEASE() { mu_.unlock(); }
  void lock_shared() FRAUD_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() FRAUD_RELEASE_SHARED() { mu_.unlock_shared(); }
  [[nodiscard]] bool try_lock_shared() FRAUD_TRY_ACQUIRE_SHARED(true) {
    return mu_.try_lock_shared();
  }

 private:
  std::shared_mutex mu_;
};

class FRAUD_SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) FRAUD_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterMutexLock() FRAUD_RELEASE() { mu_.unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

class FRAUD_SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) FRAUD_ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_.lock_shared();
  }
  ~ReaderMutexLock() FRAUD_RELEASE() { mu_.unlock_shared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace fraud::base
