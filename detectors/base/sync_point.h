#pragma once

// Named points in the code where a test runs a callback of its own (RocksDB's TEST_SYNC_POINT):
// to hold a thread there, or to inject a failure through the point's argument.
//
//   FRAUD_SYNC_POINT("TransactionCalls::commit:RecordsFlushed");
//   FRAUD_SYNC_POINT_CALLBACK("CheckpointWriter::write:Status", &error);  // std::string*
//
// Both compile to nothing unless the build defines FRAUD_TEST_HOOKS=1 (the CMake option
// FRAUD_TEST_HOOKS: on in the test presets, off in the release preset and in the image): a
// release build has no registry, and reads nothing from the environment or the file system
// for tests. A test sets callbacks with base::SyncPoints::instance().set() and clears them when
// it ends (tests/support/sync_points.h: ScopedSyncPoint).

#if FRAUD_TEST_HOOKS

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "detectors/base/mutex.h"

namespace fraud::base {

// Thread-safety: every method from any thread. A callback runs on the thread that reaches its
// point, without the registry's lock (it may block, or set and clear callbacks itself).
class SyncPoints {
 public:
  using Callback = std::function<void(void* arg)>;

  static SyncPoints& instance() {
    static SyncPoints points;
    return points;
  }

  void set(std::string name, Callback callback) FRAUD_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    callbacks_[std::move(name)] = std::move(callback);
    any_.store(true, std::memory_order_release);
  }
  void clear(std::string_view name) FRAUD_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (auto it = callbacks_.find(name); it != callbacks_.end()) callbacks_.erase(it);
    any_.store(!callbacks_.empty(), std::memory_order_release);
  }
  // Runs the callback set for `name`, if any, with `arg`.
  void process(std::string_view name, void* arg) FRAUD_EXCLUDES(mu_) {
    if (!any_.load(std::memory_order_acquire)) return;
    Callback callback;
    {
      MutexLock lock(mu_);
      auto it = callbacks_.find(name);
      if (it == callbacks_.end()) return;
      callback = it->second;
    }
    callback(arg);
  }

 private:
  SyncPoints() = default;

  Mutex mu_;
  std::map<std::string, Callback, std::less<>> callbacks_ FRAUD_GUARDED_BY(mu_);
  std::atomic<bool> any_{false};  // a callback is set: the common case takes no lock
};

}  // namespace fraud::base

#define FRAUD_SYNC_POINT(name) ::fraud::base::SyncPoints::instance().process(name, nullptr)
#define FRAUD_SYNC_POINT_CALLBACK(name, arg) \
  ::fraud::base::SyncPoints::instance().process(name, arg)

#else

#define FRAUD_SYNC_POINT(name) static_cast<void>(0)
#define FRAUD_SYNC_POINT_CALLBACK(name, arg) static_cast<void>(arg)

#endif
