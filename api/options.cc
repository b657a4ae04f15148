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

// Ok, or why `url` cannot be the peer URL template (a phrase: "must ...").
base::Status checkPeerTemplate(std::string_view url) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    return base::Status::invalidArgument("must start with http:// or https://");
  }
  if (url.find("{member}") == std::string_view::npos) {
    return base::Status::invalidArgument("must contain {member}");
  }
  for (const char c : url) {
    if (c == '?' || c == '#')
      return base::Status::invalidArgument("must not have a query or fragment");
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return base::Status::invalidArgument("must be printable ASCII without spaces");
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

base::Status checkApiToken(std::string_view token) {
  if (token.empty() || token.size() > kMaxApiTokenBytes) {
    return base::Status::invalidArgument("must be 1.." + std::to_string(kMaxApiTokenBytes) +
                                         " bytes, got " + std::to_string(token.size()));
  }
  // Never echo the token: it is a secret.
  if (!isB64Token(token)) {
    return base::Status::invalidArgument(
        "must use only the characters A-Z a-z 0-9 - . _ ~ + / and trailing =");
  }
  return {};
}

std::vector<std::string> ApiOptions::validate() const {
  std::vector<std::string> problems;
  if (!isIpLiteral(address)) {
    problems.push_back("address must be an IPv4 or IPv6 literal, got '" + address + "'");
  }
  checkRange<int64_t>(problems, "port", port, 0, 65535);
  checkRange<int64_t>(problems, "ready_max_lag", ready_max_lag, 0, int64_t{1} << 62);
  if (!peer_url_template.empty()) {
    if (const base::Status checked = checkPeerTemplate(peer_url_template); !checked.ok()) {
      problems.push_back("peer_url_template " + checked.message() + ", got '" + peer_url_template +
                         "'");
    }
  }
  if (api_token.has_value()) {
    if (const base::Status checked = checkApiToken(*api_token); !checked.ok()) {
      problems.push_back("api_token " + checked.message());
    }
  }
  if (!api_token_file.empty() && !api_token.has_value()) {
    problems.emplace_back("api_token_file is set but api_token is not (load it first)");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    problems.emplace_back("tls_cert_file and tls_key_file must be set together");
  }
  checkRange<int64_t>(problems, "reload_interval_ms", reload_interval_ms, 100, 3'600'000);
  checkRange<int64_t>(problems, "probe_port", probe_port, -1, 65535);
  if (probe_port > 0 && probe_port == port) {
    problems.push_back("probe_port must differ from port, both are " + std::to_string(port));
  }
  checkRange<uint32_t>(problems, "probe_max_connections", probe_max_connections, 1, 10'000);
  checkRange<size_t>(problems, "max_header_bytes", max_header_bytes, 1024, size_t{1024} * 1024);
  checkRange<size_t>(problems, "max_body_bytes", max_body_bytes, 1024, size_t{16} * 1024 * 1024);
  checkRange<int64_t>(problems, "read_timeout_ms", read_timeout_ms, 10, 3'600'000);
  checkRange<int64_t>(problems, "idle_timeout_ms", idle_timeout_ms, 10, 3'600'000);
  checkRange<uint32_t>(problems, "max_connections", max_connections, 1, 100'000);
  // Against max_connections when that is valid, so one wrong value is one problem.
  const bool total_valid = max_connections >= 1 && max_connections <= 100'000;
  checkRange<uint32_t>(problems, "max_connections_per_client", max_connections_per_client, 1,
                       total_valid ? max_connections : 100'000);
  checkRange<uint32_t>(problems, "threads", threads, 1, 64);
  checkRange<uint32_t>(problems, "view_threads", view_threads, 1, 64);
  checkRange<int64_t>(problems, "view_timeout_ms", view_timeout_ms, 10, 60'000);
  checkRange<uint32_t>(problems, "max_pending_view_answers", max_pending_view_answers, 1, 100'000);
  checkRange<int32_t>(problems, "thread_nice", thread_nice, 0, 19);
  checkRange<size_t>(problems, "audit_queue_lines", audit_queue_lines, 1, 1'000'000);
  return problems;
}

}  // namespace fraud::api
