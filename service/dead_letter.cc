#include "service/dead_letter.h"

#include <algorithm>

namespace fraud::service {

DeadLetter fitDeadLetter(std::string_view key, std::optional<std::string_view> value,
                         size_t header_bytes, size_t max_record_bytes) {
  DeadLetter letter{key, value, false, key.size(), value ? value->size() : 0};
  const size_t value_size = value ? value->size() : 0;
  // Headers are small and ours; a record over the limit with them is what has to shrink.
  const size_t budget = max_record_bytes > kDeadLetterReserveBytes + header_bytes
                            ? max_record_bytes - kDeadLetterReserveBytes - header_bytes
                            : 0;
  if (key.size() + value_size <= budget) return letter;
  letter.truncated = true;
  // Half the budget stays for the key when the key is the larger part; otherwise the value
  // takes what the key leaves.
  const size_t key_room =
      std::min(key.size(), std::max(budget / 2, budget - std::min(budget, value_size)));
  letter.key = key.substr(0, key_room);
  if (value) letter.value = value->substr(0, budget - key_room);
  return letter;
}

}  // namespace fraud::service
