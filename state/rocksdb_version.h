#pragma once

#include <string>

namespace fraud::state {

// The version of the RocksDB library this process has loaded, "7.8.3": the library's own
// answer (rocksdb::GetRocksVersionAsString()), not the version of the headers it was built
// against, so that a shared library replaced under a built binary shows. Safe from any thread.
[[nodiscard]] std::string rocksDbVersion();

}  // namespace fraud::state
