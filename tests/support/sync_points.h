#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>

#include "detectors/base/sync_point.h"

namespace fraud::testing {

// Sets a sync point's callback (detectors/base/sync_point.h) for its scope. In a build without
// FRAUD_TEST_HOOKS (the image's) there are no sync points: a test that needs one starts with
// FRAUD_REQUIRE_TEST_HOOKS(), which skips it there.
class ScopedSyncPoint {
 public:
  using Callback = std::function<void(void* arg)>;

  ScopedSyncPoint(std::string name, Callback callback) : name_(std::move(name)) {
#if FRAUD_TEST_HOOKS
    base::SyncPoints::instance().set(name_, std::move(callback));
#else
    static_cast<void>(callback);
#endif
  }
  ~ScopedSyncPoint() {
#if FRAUD_TEST_HOOKS
    base::SyncPoints::instance().clear(name_);
#endif
  }
  ScopedSyncPoint(const ScopedSyncPoint&) = delete;
  ScopedSyncPoint& operator=(const ScopedSyncPoint&) = delete;

 private:
  std::string name_;
};

// Every write of the checkpoint writer fails with `message` while it lives (the sync point in
// state/checkpoint_writer.cc's write()).
inline ScopedSyncPoint failCheckpointWrites(std::string message) {
  return {"CheckpointWriter::write:InjectError",
          [message = std::move(message)](void* arg) { *static_cast<std::string*>(arg) = message; }};
}

}  // namespace fraud::testing

#if FRAUD_TEST_HOOKS
#define FRAUD_REQUIRE_TEST_HOOKS() static_cast<void>(0)
#else
#define FRAUD_REQUIRE_TEST_HOOKS() \
  GTEST_SKIP() << "needs the sync points of a FRAUD_TEST_HOOKS build (this one has none)"
#endif
