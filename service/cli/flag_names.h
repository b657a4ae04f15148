#pragma once

#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fraud::cli {

// An Options field (or the words a library's validate() names it with) and the flag that sets
// it: {"window_ms", "--window-ms"}.
struct FlagName {
  std::string_view field;
  std::string_view flag;
};

// `problem`, a message of some Options::validate(), with every whole-word occurrence of a field
// in `names` replaced by its flag, so that the command line reports what the user typed:
// "window_ms must be in 1..N, got 0" -> "--window-ms must be in 1..N, got 0". Words are runs of
// letters, digits, '_' and '-'.
[[nodiscard]] std::string withFlagNames(std::string problem, std::span<const FlagName> names);

// A transform for an option whose values are names (an enum): each name in `values` becomes its
// number's text, which CLI11 then converts. Help shows the names, "immediate or transactional";
// any other value is refused as "must be immediate or transactional, got 'instant'".
[[nodiscard]] CLI::Validator namedValues(std::vector<std::pair<std::string, int>> values);

}  // namespace fraud::cli
