#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "detectors/base/status.h"

namespace fraud::kafka {

// Reads every partition of `topic` from its beginning up to `end_offsets` (exclusive; one per
// partition, e.g. from highWatermarks()), each partition in its order, and hands each record to
// `visit`. `consumer` must come from makeReader() (it reports partition ends), whose
// read_committed setting decides what a transactional topic shows. A partition with records
// still to come but none delivered for `stall_timeout_ms` (an open transaction, a lost broker)
// fails the read. The consumer is unassigned again at the end.
[[nodiscard]] base::Status readToEnd(rd_kafka_t* consumer, const std::string& topic,
                                     const std::vector<int64_t>& end_offsets,
                                     const std::function<void(const rd_kafka_message_t&)>& visit,
                                     int stall_timeout_ms);

}  // namespace fraud::kafka
