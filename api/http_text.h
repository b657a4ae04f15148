#pragma once

#include <algorithm>
#include <string_view>

// Internal to api/: small text helpers of HTTP fields and targets.
namespace fraud::api::http_text {

inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

inline std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// The path of a request-target: without its query and fragment.
inline std::string_view pathOf(std::string_view target) {
  return target.substr(0, target.find_first_of("?#"));
}

}  // namespace fraud::api::http_text
