#include "detectors/base/sync_point.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/sync_points.h"

namespace fraud::testing {
namespace {

void reachPoint(std::string& arg) { FRAUD_SYNC_POINT_CALLBACK("SyncPointTest:Point", &arg); }

TEST(SyncPoint, RunsTheCallbackSetForItsNameOnlyWhileItIsSet) {
  FRAUD_REQUIRE_TEST_HOOKS();
  std::string arg;
  reachPoint(arg);
  EXPECT_EQ(arg, "") << "no callback set";
  {
    ScopedSyncPoint other("SyncPointTest:Other", [](void*) { FAIL() << "another point's"; });
    ScopedSyncPoint point("SyncPointTest:Point",
                          [](void* a) { *static_cast<std::string*>(a) = "reached"; });
    reachPoint(arg);
    EXPECT_EQ(arg, "reached");
  }
  arg.clear();
  reachPoint(arg);
  EXPECT_EQ(arg, "") << "cleared with its scope";
}

#if !FRAUD_TEST_HOOKS
TEST(SyncPoint, ABuildWithoutTestHooksHasNoRegistry) {
  std::string arg;
  reachPoint(arg);  // compiles to nothing
  EXPECT_EQ(arg, "");
}
#endif

}  // namespace
}  // namespace fraud::testing
