#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "service/kafka/client.h"

namespace fraud::kafka {

// The properties-file syntax of `--kafka-config` (fraud-detector and fraud-loadgen alike; the
// chart hands both the same file). What people write in a Java `.properties` file for a Kafka
// client means the same here:
//   - `key=value` or `key: value` (the first `=` or `:` separates; spaces around key and value
//     are trimmed, so is a final CR);
//   - lines whose first non-blank character is `#` or `!` are comments; blank lines are skipped;
//   - a line ending in an odd number of backslashes continues on the next line (its leading
//     blanks dropped);
//   - in keys and values `\\`, `\=`, `\:`, `\#`, `\!`, `\ ` stand for the character, `\t` `\n`
//     `\r` `\f` for the control character; `\uXXXX` is refused (write the UTF-8 itself).
// Stricter than Java, so that a typo is an error rather than a silently wrong setting: a line
// without `=` or `:`, an empty key or a key with blanks inside is refused. A key given twice:
// the last wins (as Java).
struct PropertiesResult {
  KafkaProperties properties;
  std::vector<std::string> problems;  // "<source>:<line>: ..." each; empty when all is well
};

// Parses `text`; `source` names it in problems (a path).
[[nodiscard]] PropertiesResult parseProperties(std::string_view text, const std::string& source);
// Reads and parses the file at `path`; an unreadable file is one problem.
[[nodiscard]] PropertiesResult readPropertiesFile(const std::string& path);

// One `--kafka KEY=VALUE` override: split at the first `=`, both sides trimmed; nothing when
// there is no `=` or the key is empty.
[[nodiscard]] std::optional<std::pair<std::string, std::string>> parseProperty(
    std::string_view text);

}  // namespace fraud::kafka
