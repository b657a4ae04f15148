#include "detectors/base/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace fraud::base {
namespace {

using std::chrono::milliseconds;

class Flag {
 public:
  void raise() FRAUD_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    raised_ = true;
    cv_.notify_all();
  }
  // Waits until raised or `deadline`; whether it was raised.
  bool waitUntil(std::chrono::steady_clock::time_point deadline) FRAUD_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    while (!raised_) {
      if (!lock.waitUntil(cv_, deadline)) return raised_;
    }
    return true;
  }
  bool raisedAfterRelock() FRAUD_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    lock.unlock();
    lock.lock();
    return raised_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  bool raised_ FRAUD_GUARDED_BY(mu_) = false;
};

TEST(Mutex, AWaitEndsWhenAnotherThreadRaisesTheCondition) {
  Flag flag;
  std::thread raiser([&] {
    std::this_thread::sleep_for(milliseconds(20));
    flag.raise();
  });
  EXPECT_TRUE(flag.waitUntil(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  raiser.join();
  EXPECT_TRUE(flag.raisedAfterRelock());
}

TEST(Mutex, AWaitEndsAtItsDeadlineWhenNothingHappens) {
  Flag flag;
  EXPECT_FALSE(flag.waitUntil(std::chrono::steady_clock::now() + milliseconds(5)));
  EXPECT_FALSE(flag.raisedAfterRelock());
}

TEST(Mutex, TryLockFailsWhileHeldAndSucceedsOnceReleased) {
  Mutex mu;
  SharedMutex shared;
  {
    MutexLock lock(mu);
    WriterMutexLock writer(shared);
    std::thread other([&] {
      EXPECT_FALSE(mu.try_lock());
      EXPECT_FALSE(shared.try_lock_shared());
    });
    other.join();
  }
  ASSERT_TRUE(mu.try_lock());
  mu.unlock();
  {
    ReaderMutexLock reader(shared);
    std::thread other([&] {
      ASSERT_TRUE(shared.try_lock_shared()) << "readers share the lock";
      shared.unlock_shared();
    });
    other.join();
  }
}

}  // namespace
}  // namespace fraud::base
