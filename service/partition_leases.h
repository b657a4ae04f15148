#pragma once

#include <condition_variable>
#include <cstdint>
#include <set>
#include <utility>

#include "detectors/base/mutex.h"

namespace fraud::service {

// Which restore writes a partition's local state now. The active restorer (the partition is
// assigned here) and the standby restorer (a warm copy of a partition owned elsewhere) each
// hold a partition's lease while they read its checkpoint and write its cards, so they never
// interleave their writes. The active side waits for a lease; the standby side only tries, and
// gives up the partition for that round: the standby never waits, so neither side can wait on
// the other while holding a lease the other needs.
//
// Thread-safety: every method may be called from any thread.
class PartitionLeases {
 public:
  // A held lease; released when destroyed. Empty when a try failed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept
        : leases_(std::exchange(other.leases_, nullptr)), partition_(other.partition_) {}
    Lease& operator=(Lease&& other) noexcept {
      if (this != &other) {
        release();
        leases_ = std::exchange(other.leases_, nullptr);
        partition_ = other.partition_;
      }
      return *this;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }

    [[nodiscard]] explicit operator bool() const { return leases_ != nullptr; }
    void release() {
      if (leases_ != nullptr) std::exchange(leases_, nullptr)->release(partition_);
    }

   private:
    friend class PartitionLeases;
    Lease(PartitionLeases* leases, int32_t partition) : leases_(leases), partition_(partition) {}
    PartitionLeases* leases_ = nullptr;
    int32_t partition_ = 0;
  };

  // Waits until the partition is free, then holds it.
  [[nodiscard]] Lease acquire(int32_t partition) FRAUD_EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    while (held_.count(partition) > 0) lock.wait(freed_);
    held_.insert(partition);
    return Lease(this, partition);
  }
  // Holds the partition when it is free; an empty lease otherwise.
  [[nodiscard]] Lease tryAcquire(int32_t partition) FRAUD_EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    if (!held_.insert(partition).second) return {};
    return Lease(this, partition);
  }
  [[nodiscard]] bool held(int32_t partition) const FRAUD_EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    return held_.count(partition) > 0;
  }

 private:
  void release(int32_t partition) FRAUD_EXCLUDES(mu_) {
    {
      base::MutexLock lock(mu_);
      held_.erase(partition);
    }
    freed_.notify_all();
  }

  mutable base::Mutex mu_;
  std::condition_variable freed_;
  std::set<int32_t> held_ FRAUD_GUARDED_BY(mu_);
};

}  // namespace fraud::service
