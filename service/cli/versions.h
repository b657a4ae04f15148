#pragma once

#include <string>
#include <string_view>

namespace fraud::cli {

// What a process of this project runs: the project's version (the build's) and those of
// librdkafka and RocksDB as the loaded shared libraries report them (rd_kafka_version_str(),
// state::rocksDbVersion()), not the headers' macros, which name what the build saw: a library
// upgraded under a built binary shows here. Safe from any thread.
struct RuntimeVersions {
  std::string project;     // "0.1.0"
  std::string librdkafka;  // "2.0.2"
  std::string rocksdb;     // "7.8.3"
};
[[nodiscard]] RuntimeVersions runtimeVersions();

// What `--version` prints, without the final newline:
//   fraud-detector 0.1.0
//   librdkafka 2.0.2
//   RocksDB 7.8.3
[[nodiscard]] std::string versionText(std::string_view program);

}  // namespace fraud::cli
