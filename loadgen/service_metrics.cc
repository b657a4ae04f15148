#include "loadgen/service_metrics.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

namespace fraud::loadgen {
namespace {

constexpr std::string_view kRecordsFamily = "fraud_records_total";
constexpr size_t kMaxAnswerBytes = size_t{32} * 1024 * 1024;
constexpr int kScrapeTimeoutMs = 5'000;

// The value of label `name` in a sample line's label set `{a="x",b="y"}`; "" when absent.
std::string_view labelValue(std::string_view labels, std::string_view name) {
  const std::string key = std::string(name) + "=\"";
  for (size_t at = labels.find(key); at != std::string_view::npos; at = labels.find(key, at + 1)) {
    if (at != 0 && labels[at - 1] != '{' && labels[at - 1] != ',') continue;
    const size_t begin = at + key.size();
    const size_t end = labels.find('"', begin);
    if (end == std::string_view::npos) return {};
    return labels.substr(begin, end - begin);
  }
  return {};
}

// One `fraud_records_total{...} VALUE` line into `counts`.
void addSample(std::string_view line, ServiceRecordCounts& counts) {
  const size_t close = line.find('}');
  if (close == std::string_view::npos) return;
  const std::string_view labels =
      line.substr(kRecordsFamily.size(), close + 1 - kRecordsFamily.size());
  std::string_view rest = line.substr(close + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const std::string number(rest.substr(0, rest.find(' ')));
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end == number.c_str() || !(value >= 0)) return;
  const std::string_view outcome = labelValue(labels, "outcome");
  if (outcome == "accepted") counts.accepted += value;
  if (outcome == "late_dropped") counts.late_dropped += value;
  if (outcome == "duplicate") counts.duplicate += value;
  if (outcome == "rejected") counts.rejected += value;
}

// A connected socket, closed on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&&) = delete;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  [[nodiscard]] int fd() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// A connected socket, or an error.
base::Result<Socket> connectTo(const HttpUrl& url, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found); rc != 0) {
    return base::Status::failed(std::string("cannot resolve ") + url.host + ": " +
                                ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  timeval timeout{};
  timeout.tv_sec = timeout_ms / 1000;
  timeout.tv_usec = static_cast<suseconds_t>((timeout_ms % 1000) * 1000);
  std::string error;
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    Socket socket(fd);
    // Linux bounds connect() by the send timeout too.
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return socket;
    error = "cannot connect to " + url.host + ":" + url.port + ": " + std::strerror(errno);
  }
  if (error.empty()) error = "cannot connect to " + url.host + ":" + url.port;
  return base::Status::failed(std::move(error));
}

// The body of a complete HTTP answer of status 200.
base::Result<std::string> bodyOf(const std::string& answer) {
  const size_t head_end = answer.find("\r\n\r\n");
  if (answer.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) {
    return base::Status::failed("not an HTTP answer");
  }
  const std::string status_line = answer.substr(0, answer.find("\r\n"));
  if (status_line.size() < 12 || status_line.compare(9, 3, "200") != 0) {
    return base::Status::failed("answered " + status_line);
  }
  std::string head = answer.substr(0, head_end);
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (head.find("transfer-encoding:") != std::string::npos) {
    return base::Status::failed("answered with a transfer encoding (only plain bodies are read)");
  }
  return answer.substr(head_end + 4);
}

}  // namespace

ServiceRecordCounts ServiceRecordCounts::since(const ServiceRecordCounts& before) const {
  return {accepted - before.accepted, late_dropped - before.late_dropped,
          duplicate - before.duplicate, rejected - before.rejected};
}

base::Result<ServiceRecordCounts> recordCountsIn(std::string_view text) {
  ServiceRecordCounts counts;
  bool service = false;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    service = service || line.starts_with("fraud_") || line.starts_with("# TYPE fraud_");
    if (line.starts_with(kRecordsFamily) && line.size() > kRecordsFamily.size() &&
        line[kRecordsFamily.size()] == '{') {
      addSample(line, counts);
    }
  }
  if (!service) {
    return base::Status::failed("no fraud_ metric in it: not the /metrics of fraud-detector");
  }
  return counts;
}

base::Result<HttpUrl> parseHttpUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    return base::Status::failed("'" + std::string(url) + "' is not an http:// URL");
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  HttpUrl out;
  out.path = slash == std::string_view::npos ? "/metrics" : std::string(rest.substr(slash));
  std::string_view host = authority;
  std::string_view port = "80";
  if (authority.starts_with('[')) {  // [IPv6]:port
    const size_t close = authority.find(']');
    host = close == std::string_view::npos ? std::string_view() : authority.substr(1, close - 1);
    if (close != std::string_view::npos && authority.size() > close + 1 &&
        authority[close + 1] == ':') {
      port = authority.substr(close + 2);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  int port_number = 0;
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), port_number);
  if (host.empty() || authority.find('@') != std::string_view::npos || ec != std::errc() ||
      ptr != port.data() + port.size() || port_number < 1 || port_number > 65'535) {
    return base::Status::failed("'" + std::string(url) + "' has no usable HOST:PORT");
  }
  out.host = std::string(host);
  out.port = std::string(port);
  return out;
}

base::Result<std::string> httpGet(const HttpUrl& url, int timeout_ms) {
  auto connected = connectTo(url, timeout_ms);
  if (!connected) return connected.status();
  const Socket socket = std::move(*connected);
  const std::string request = "GET " + url.path + " HTTP/1.0\r\nHost: " + url.host +
                              "\r\nAccept: text/plain\r\nUser-Agent: fraud-loadgen\r\n\r\n";
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n =
        ::send(socket.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return base::Status::failed(std::string("cannot send the request: ") + std::strerror(errno));
    }
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  std::array<char, 1 << 16> buffer{};
  while (true) {
    const ssize_t n = ::recv(socket.fd(), buffer.data(), buffer.size(), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return base::Status::failed(std::string("no complete answer: ") + std::strerror(errno));
    }
    answer.append(buffer.data(), static_cast<size_t>(n));
    if (answer.size() > kMaxAnswerBytes) {
      return base::Status::failed("its answer is larger than " + std::to_string(kMaxAnswerBytes) +
                                  " bytes");
    }
  }
  return bodyOf(answer);
}

base::Result<ServiceRecordCounts> scrapeRecordCounts(const std::vector<std::string>& urls) {
  ServiceRecordCounts sum;
  for (const auto& text : urls) {
    const auto url = parseHttpUrl(text);
    const auto body =
        url ? httpGet(*url, kScrapeTimeoutMs) : base::Result<std::string>(url.status());
    const auto counts =
        body ? recordCountsIn(*body) : base::Result<ServiceRecordCounts>(body.status());
    if (!counts) return counts.status().withPrefix(text + ": ");
    sum.accepted += counts->accepted;
    sum.late_dropped += counts->late_dropped;
    sum.duplicate += counts->duplicate;
    sum.rejected += counts->rejected;
  }
  return sum;
}

base::Status ServiceTally::start() {
  auto counts = scrapeRecordCounts(urls_);
  if (!counts) return counts.status();
  before_ = *counts;
  return {};
}

void ServiceTally::finish(uint64_t records, double wait_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(wait_s));
  while (true) {
    if (const auto counts = scrapeRecordCounts(urls_)) {
      run_ = counts->since(before_);
      error_.clear();
    } else {
      error_ = counts.message();
    }
    const bool all_counted = run_ && run_->total() >= static_cast<double>(records);
    if (all_counted || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  records_ = records;
}

nlohmann::ordered_json ServiceTally::summary() const {
  if (!run_) return "not read: " + error_;
  const double valid = run_->valid();
  nlohmann::ordered_json out;
  out["instances"] = urls_.size();
  // Counters of whole records: shown as such.
  out["records"] = std::llround(valid);
  out["late_dropped"] = std::llround(run_->late_dropped);
  out["late_dropped_share"] = valid > 0 ? run_->late_dropped / valid : 0.0;
  out["counted_all"] = run_->total() >= static_cast<double>(records_);
  return out;
}

}  // namespace fraud::loadgen
