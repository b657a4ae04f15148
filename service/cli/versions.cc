#include "service/cli/versions.h"

#include <librdkafka/rdkafka.h>

#include "state/rocksdb_version.h"

namespace fraud::cli {

RuntimeVersions runtimeVersions() {
  return {FRAUD_VERSION, rd_kafka_version_str(), state::rocksDbVersion()};
}

std::string versionText(std::string_view program) {
  const RuntimeVersions versions = runtimeVersions();
  return std::string(program) + " " + versions.project + "\nlibrdkafka " + versions.librdkafka +
         "\nRocksDB " + versions.rocksdb;
}

}  // namespace fraud::cli
