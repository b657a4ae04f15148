#include "state/partition_checkpoint.h"

#include <utility>

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

// The checkpoint `bytes` encode, or why they are none.
struct Decoded {
  std::optional<PartitionCheckpoint> checkpoint;
  std::string rejection;
};

Decoded decodeChecked(std::string_view bytes) {
  if (bytes.size() != kEncodedSize || static_cast<uint8_t>(bytes[0]) != kCheckpointFormat ||
      static_cast<uint8_t>(bytes[9]) > 1) {
    return {std::nullopt, "not a checkpoint of format " + std::to_string(kCheckpointFormat) + " (" +
                              std::to_string(bytes.size()) + " bytes)"};
  }
  PartitionCheckpoint checkpoint;
  checkpoint.next_offset = getFixed64(bytes.substr(1));
  if (bytes[9] == '\1') checkpoint.stream_time = getFixed64(bytes.substr(10));
  checkpoint.changelog_next_offset = getFixed64(bytes.substr(18));
  if (checkpoint.next_offset < 0) {
    return {std::nullopt, "next offset " + std::to_string(checkpoint.next_offset) + " is negative"};
  }
  if (checkpoint.stream_time &&
      (*checkpoint.stream_time < 0 || *checkpoint.stream_time > detectors::kMaxEventTime)) {
    return {std::nullopt, "stream time " + std::to_string(*checkpoint.stream_time) +
                              " is outside 0.." + std::to_string(detectors::kMaxEventTime)};
  }
  if (checkpoint.changelog_next_offset < 0) {
    return {std::nullopt, "changelog offset " + std::to_string(checkpoint.changelog_next_offset) +
                              " is negative"};
  }
  return {checkpoint, {}};
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
  return decodeChecked(bytes).checkpoint;
}

base::Status PartitionCheckpoint::rejection(std::string_view bytes) {
  Decoded decoded = decodeChecked(bytes);
  if (decoded.checkpoint) return {};
  return base::Status::failed(std::move(decoded.rejection));
}

}  // namespace fraud::state
