#include "detectors/key_routing.h"

namespace fraud::detectors {

KeyRouting routeKey(const TopicPartitioning& topic, std::string_view key, int32_t partition) {
  if (topic.partition_count < 1 || partition < 0 || partition >= topic.partition_count) {
    return {Routing::kUnknown, -1};
  }
  if (key.empty()) return {Routing::kUnkeyed, -1};
  const int32_t belongs = partitionFor(topic.partitioner, key, topic.partition_count);
  return {belongs == partition ? Routing::kInPlace : Routing::kMisrouted, belongs};
}

}  // namespace fraud::detectors
