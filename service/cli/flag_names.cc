#include "service/cli/flag_names.h"

#include <cctype>

namespace fraud::cli {
namespace {

bool wordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

// "a", "a or b", "a, b or c".
std::string listed(const std::vector<std::pair<std::string, int>>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += i + 1 == values.size() ? " or " : ", ";
    text += values[i].first;
  }
  return text;
}

}  // namespace

std::string withFlagNames(std::string problem, std::span<const FlagName> names) {
  for (const auto& [field, flag] : names) {
    for (size_t at = problem.find(field); at != std::string::npos;
         at = problem.find(field, at + 1)) {
      const size_t end = at + field.size();
      if ((at > 0 && wordChar(problem[at - 1])) ||
          (end < problem.size() && wordChar(problem[end]))) {
        continue;
      }
      problem.replace(at, field.size(), flag);
      at += flag.size() - 1;
    }
  }
  return problem;
}

CLI::Validator namedValues(std::vector<std::pair<std::string, int>> values) {
  std::string names = listed(values);
  return {[values = std::move(values), names](std::string& value) -> std::string {
            for (const auto& [name, number] : values) {
              if (value == name) {
                value = std::to_string(number);
                return {};
              }
            }
            return "must be " + names + ", got '" + value + "'";
          },
          names};
}

}  // namespace fraud::cli
