#include "api/options.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace fraud::api {
namespace {

bool isIpLiteral(const std::string& text) {
  std::array<unsigned char, sizeof(in6_addr)> buf{};
  return inet_pton(AF_INET, text.c_str(), buf.data()) == 1 ||
         inet_pton(AF_INET6, text.c_str(), buf.data()) == 1;
}

// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
bool isB64Token(std::string_view token) {
  const size_t end = token.find_last_not_of('=');
  if (end == std::string_view::npos) return false;
  return std::all_of(
      token.begin(), token.begin() + static_cast<std::ptrdiff_t>(end) + 1, [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
      });
}

std::string peerTemplateProblem(std::string_view url) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    return "must start with http:// or https://";
  }
  if (url.find("{member}") == std::string_view::npos) return "must contain {member}";
  for (const char c : url) {
    if (c == '?' || c == '#') return "must not have a query or fragment";
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return "must be printable ASCII without spaces";
    }
  }
  return {};
}

template <class T>
void checkRange(std::vector<std::string>& problems, const char* name, T value, T low, T high) {
  if (value < low || value > high) {
    problems.push_back(std::string(name) + " must be in " + std::to_string(low) + ".." +
                       std::to_string(high) + ", got " + std::to_string(value));
  }
}

}  // namespace

std::vector<std::string> ApiOptions::validate() const {
  std::vector<std::string> problems;
  if (!isIpLiteral(address)) {
    problems.push_back("address must be an IPv4 or IPv6 literal, got '" + address + "'");
  }
  checkRange<int64_t>(problems, "port", port, 0, 65535);
  checkRange<int64_t>(problems, "ready_max_lag", ready_max_lag, 0, int64_t{1} << 62);
  if (!peer_url_template.empty()) {
    if (const std::string why = peerTemplateProblem(peer_url_template); !why.empty()) {
      problems.push_back("peer_url_template " + why + ", got '" + peer_url_template + "'");
    }
  }
  if (api_token.has_value()) {
    if (api_token->empty() || api_token->size() > 4096) {
      problems.push_back("api_token must be 1..4096 bytes, got " +
                         std::to_string(api_token->size()));
    } else if (!isB64Token(*api_token)) {
      // Never echo the token: it is a secret.
      problems.emplace_back(
          "api_token must use only the characters A-Z a-z 0-9 - . _ ~ + / and trailing =");
    }
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    problems.emplace_back("tls_cert_file and tls_key_file must be set together");
  }
  checkRange<size_t>(problems, "max_header_bytes", max_header_bytes, 1024, size_t{1024} * 1024);
  checkRange<size_t>(problems, "max_body_bytes", max_body_bytes, 1024, size_t{16} * 1024 * 1024);
  checkRange<int64_t>(problems, "read_timeout_ms", read_timeout_ms, 10, 3'600'000);
  checkRange<int64_t>(problems, "idle_timeout_ms", idle_timeout_ms, 10, 3'600'000);
  checkRange<uint32_t>(problems, "max_connections", max_connections, 1, 100'000);
  checkRange<uint32_t>(problems, "threads", threads, 1, 64);
  checkRange<uint32_t>(problems, "view_threads", view_threads, 1, 64);
  return problems;
}

}  // namespace fraud::api
