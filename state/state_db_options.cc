#include "state/state_db_options.h"

namespace fraud::state {

std::vector<std::string> StateDbOptions::validate() const {
  std::vector<std::string> problems;
  if (dir.empty()) problems.emplace_back("state dir must not be empty");
  if (block_cache_mb < 8 || block_cache_mb > 1'048'576) {
    problems.push_back("rocksdb block cache must be 8..1048576 MiB, got " +
                       std::to_string(block_cache_mb));
  }
  if (write_buffer_mb < 4 || write_buffer_mb > 1'048'576) {
    problems.push_back("rocksdb write buffer must be 4..1048576 MiB, got " +
                       std::to_string(write_buffer_mb));
  }
  if (card_cache_mb < 1 || card_cache_mb > 1'048'576) {
    problems.push_back("state cache must be 1..1048576 MiB, got " + std::to_string(card_cache_mb));
  }
  if (restore_buffer_mb < 1 || restore_buffer_mb > 1'048'576) {
    problems.push_back("restore buffer must be 1..1048576 MiB, got " +
                       std::to_string(restore_buffer_mb));
  }
  return problems;
}

}  // namespace fraud::state
