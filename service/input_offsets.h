#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fraud::service {

// One input partition's position committed with a transaction: the next offset to read.
struct InputOffset {
  int32_t partition = 0;
  int64_t next_offset = 0;
};

// The input offsets a transaction commits, as plain values.
struct InputOffsets {
  std::string topic;
  // Written as each offset's commit metadata (the instance id: TransactionFencer reads it).
  std::string metadata;
  std::vector<InputOffset> offsets;
};

}  // namespace fraud::service
