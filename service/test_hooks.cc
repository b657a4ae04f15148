#include "service/test_hooks.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "detectors/base/sync_point.h"
#include "service/transaction_calls.h"

namespace fraud::service {

void installTestHooksFromEnvironment() {
  const char* hold = std::getenv("FRAUD_TEST_HOLD_COMMIT_FILE");
  if (hold == nullptr || *hold == '\0') return;
  spdlog::warn(
      "test hook: commits hold after their records, before their offsets, while {} "
      "exists",
      hold);
  base::SyncPoints::instance().set(std::string(kRecordsFlushedSyncPoint),
                                   [path = std::string(hold)](void*) {
                                     if (!std::filesystem::exists(path)) return;
                                     spdlog::warn("test hook: commit held while {} exists", path);
                                     std::ofstream(path + ".held") << "held\n";
                                     while (std::filesystem::exists(path)) {
                                       std::this_thread::sleep_for(std::chrono::milliseconds(10));
                                     }
                                   });
}

}  // namespace fraud::service
