#include "service/kafka/properties.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "detectors/base/status.h"

namespace fraud::kafka {
namespace {

constexpr std::string_view kBlanks = " \t\f";

std::string_view trimmed(std::string_view s) {
  const auto first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(kBlanks);
  return s.substr(first, last - first + 1);
}

bool continues(std::string_view line) {
  size_t backslashes = 0;
  while (backslashes < line.size() && line[line.size() - 1 - backslashes] == '\\') ++backslashes;
  return backslashes % 2 == 1;
}

// Undoes the escapes; an error for \u.
base::Result<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 't':
        out.push_back('\t');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'u':
        return base::Status::invalidArgument(
            "\\u escapes are not supported; write the character itself (UTF-8)");
      default:
        out.push_back(c);
        break;
    }
  }
  return out;
}

// The position of the first `=` or `:` not escaped by a backslash.
size_t separatorOf(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\') {
      ++i;
    } else if (line[i] == '=' || line[i] == ':') {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

PropertiesResult parseProperties(std::string_view text, const std::string& source) {
  PropertiesResult result;
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= text.size();) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    auto line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t number = i + 1;
    std::string_view first = trimmed(lines[i]);
    if (first.empty() || first[0] == '#' || first[0] == '!') continue;
    std::string logical(first);
    while (continues(logical) && i + 1 < lines.size()) {
      logical.pop_back();
      logical += trimmed(lines[++i]);
    }
    if (continues(logical)) logical.pop_back();  // a continuation at the end of the file
    const auto where = source + ":" + std::to_string(number) + ": ";
    const auto sep = separatorOf(logical);
    if (sep == std::string_view::npos) {
      result.problems.push_back(where + "expected key=value (or key: value)");
      continue;
    }
    const auto raw_key = trimmed(std::string_view(logical).substr(0, sep));
    const auto raw_value = trimmed(std::string_view(logical).substr(sep + 1));
    if (raw_key.empty()) {
      result.problems.push_back(where + "the key before '" + logical[sep] + "' is empty");
      continue;
    }
    if (raw_key.find_first_of(kBlanks) != std::string_view::npos) {
      result.problems.push_back(where + "the key '" + std::string(raw_key) +
                                "' has blanks inside (expected key=value)");
      continue;
    }
    auto key = unescape(raw_key);
    if (!key) {
      result.problems.push_back(where + key.message());
      continue;
    }
    auto value = unescape(raw_value);
    if (!value) {
      result.problems.push_back(where + value.message());
      continue;
    }
    result.properties[std::move(*key)] = std::move(*value);
  }
  return result;
}

PropertiesResult readPropertiesFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    PropertiesResult result;
    result.problems.push_back("cannot read " + path + ": " + std::strerror(errno));
    return result;
  }
  std::ostringstream content;
  content << in.rdbuf();
  return parseProperties(content.str(), path);
}

std::optional<std::pair<std::string, std::string>> parseProperty(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  const auto key = trimmed(text.substr(0, eq));
  if (key.empty()) return std::nullopt;
  return std::pair{std::string(key), std::string(trimmed(text.substr(eq + 1)))};
}

}  // namespace fraud::kafka
