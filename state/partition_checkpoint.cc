#include "state/partition_checkpoint.h"

namespace fraud::state {
namespace {

constexpr uint8_t kCheckpointFormat = 1;
constexpr size_t kEncodedSize = 26;  // format, next offset, has stream time, stream time, changelog

void putFixed64(std::string& out, int64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i)));
}

int64_t getFixed64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return static_cast<int64_t>(v);
}

}  // namespace

std::string PartitionCheckpoint::encode() const {
  std::string out(1, static_cast<char>(kCheckpointFormat));
  putFixed64(out, next_offset);
  out.push_back(stream_time ? '\1' : '\0');
  putFixed64(out, stream_time.value_or(0));
  putFixed64(out, changelog_next_offset);
  return out;
}

std::optional<PartitionCheckpoint> PartitionCheckpoint::decode(std::string_view bytes) {
  if (bytes.size() != kEncodedSize || static_cast<uint8_t>(bytes[0]) != kCheckpointFormat ||
      static_cast<uint8_t>(bytes[9]) > 1) {
    return std::nullopt;
  }
  PartitionCheckpoint checkpoint;
  checkpoint.next_offset = getFixed64(bytes.substr(1));
  if (bytes[9] == '\1') checkpoint.stream_time = getFixed64(bytes.substr(10));
  checkpoint.changelog_next_offset = getFixed64(bytes.substr(18));
  return checkpoint;
}

}  // namespace fraud::state
