// Hostile clients against the real server on loopback (issue 10): each attack runs while a
// poller asks the probe listener for /healthz, /readyz and /metrics on fresh connections, as a
// kubelet and a Prometheus would. Every probe must answer 200 within 1 s, and the process's
// resident memory must stay within kRssBound of its size before the attack. The server runs in
// this process, so /proc/self/statm is its memory (the attackers' own buffers are small).
//
// Each test prints one `hostile:` line with what it measured; docs/measurements.md ("The HTTP
// API under attack") records them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/api/api_server_fixture.h"

namespace fraud::api {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr size_t kMiB = 1024 * 1024;
constexpr size_t kRssBound = 64 * kMiB;
constexpr milliseconds kProbeDeadline{1000};
constexpr milliseconds kAttack{4000};

size_t rssBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// A blocking POSIX socket to 127.0.0.1:port whose sends give up after 100 ms, so an attacker
// the server no longer reads from notices it.
class Socket {
 public:
  explicit Socket(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    timeval timeout{0, 100'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  [[nodiscard]] bool ok() const { return fd_ >= 0; }

  // Sends what it can before the send timeout: false once the peer has closed or reset.
  bool send(const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return !peerClosed();
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Whether the peer has sent its FIN or reset (what it sent before stays readable).
  bool peerClosed() {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  // Everything the server sent, until it closes or `timeout`.
  std::string readAll(milliseconds timeout) {
    std::string received;
    const auto deadline = Clock::now() + timeout;
    char buffer[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return received;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return received;
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return received;
      received.append(buffer, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

// "HTTP/1.1 411 ..." -> 411; 0 for no answer.
int statusOf(const std::string& answer) {
  if (!answer.starts_with("HTTP/1.")) return 0;
  return std::atoi(answer.substr(9, 3).c_str());
}

// Asks the probe listener for each probe path on a fresh connection until stopped, recording
// the slowest answer, every answer that is not a 200 within kProbeDeadline, and the peak RSS.
class ProbePoller {
 public:
  explicit ProbePoller(uint16_t port) : port_(port), thread_([this] { run(); }) {}
  ~ProbePoller() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  // probes() may be read while polling; the rest after stop().
  int probes() const { return probes_.load(); }
  const std::vector<std::string>& failures() const { return failures_; }
  milliseconds slowest() const { return slowest_; }
  size_t peakRss() const { return peak_rss_; }

 private:
  void run() {
    while (!stop_) {
      for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
        peak_rss_ = std::max(peak_rss_, rssBytes());
        const auto start = Clock::now();
        Socket probe(port_);
        std::string answer;
        if (probe.ok() && probe.send(std::string("GET ") + path +
                                     " HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")) {
          answer = probe.readAll(milliseconds(5000));
        }
        const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
        ++probes_;
        slowest_ = std::max(slowest_, took);
        const int status = statusOf(answer);
        if (status != 200 || took > kProbeDeadline) {
          failures_.push_back(std::string(path) + ": status " + std::to_string(status) + " in " +
                              std::to_string(took.count()) + " ms");
        }
      }
      std::this_thread::sleep_for(milliseconds(20));  // pacing, as a kubelet's period
    }
  }

  const uint16_t port_;
  std::atomic<bool> stop_{false};
  std::atomic<int> probes_{0};
  std::vector<std::string> failures_;
  milliseconds slowest_{0};
  size_t peak_rss_ = 0;
  std::thread thread_;
};

class HostileClientTest : public ApiServerTest {
 protected:
  void SetUp() override {
    options_.api_token = "hostile-token";
    // A test binary's allocator keeps what it freed: measure from a warmed-up server.
    startServer();
    for (int i = 0; i < 20; ++i) {
      testing::HttpClient client(probePort());
      ASSERT_EQ(client.get("/metrics")->status, 200);
    }
    baseline_rss_ = rssBytes();
  }

  uint16_t probePort() const { return server_->probePort(); }

  // Runs `attack` while polling probes; checks the probes and the memory and prints the line.
  template <class Attack>
  void underAttack(const std::string& name, Attack attack) {
    ProbePoller poller(probePort());
    attack();
    ASSERT_TRUE(testing::waitFor([&] { return poller.probes() >= 3; }, milliseconds(10'000)));
    poller.stop();
    const size_t peak = std::max(poller.peakRss(), rssBytes());
    const size_t growth = peak > baseline_rss_ ? peak - baseline_rss_ : 0;
    std::printf(
        "hostile: attack=%s rss_before_mib=%.1f rss_growth_mib=%.1f probes=%d "
        "slowest_probe_ms=%lld failed_probes=%zu\n",
        name.c_str(), static_cast<double>(baseline_rss_) / kMiB, static_cast<double>(growth) / kMiB,
        poller.probes(), static_cast<long long>(poller.slowest().count()),
        poller.failures().size());
    std::fflush(stdout);
    EXPECT_LE(growth, kRssBound);
    EXPECT_TRUE(poller.failures().empty())
        << poller.failures().size() << " probes failed, the first: " << poller.failures().front();
  }

  // `clients` connections each send `head`, then `filler` over and over for kAttack (or until
  // `per_client` bytes, or the server closes). The status each got, 0 for none.
  std::vector<int> flood(int clients, const std::string& head, const std::string& filler,
                         size_t per_client = 160 * kMiB) {
    std::vector<int> statuses(static_cast<size_t>(clients), 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < clients; ++i) {
      threads.emplace_back([&, i] {
        Socket socket(port_);
        if (!socket.ok()) return;
        const auto deadline = Clock::now() + kAttack;
        size_t sent = 0;
        bool open = socket.send(head);
        while (open && sent < per_client && Clock::now() < deadline) {
          open = socket.send(filler);
          sent += filler.size();
        }
        statuses[static_cast<size_t>(i)] = statusOf(socket.readAll(milliseconds(2000)));
      });
    }
    for (auto& thread : threads) thread.join();
    return statuses;
  }

  size_t baseline_rss_ = 0;
};

constexpr const char* kChunkedPost =
    "POST /v1/cards/lookup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";

TEST_F(HostileClientTest, ChunkExtensionFloodIsRefusedAndBounded) {
  std::vector<int> statuses;
  underAttack("chunk-extension-flood", [&] {
    statuses = flood(3, std::string(kChunkedPost) + "1;", std::string(64 * 1024, 'e'));
  });
  for (const int status : statuses) EXPECT_EQ(status, 411);
}

TEST_F(HostileClientTest, TrailerFloodIsRefusedAndBounded) {
  std::string trailers;
  while (trailers.size() < 64 * 1024) trailers += "X-Trailer: " + std::string(100, 't') + "\r\n";
  std::vector<int> statuses;
  underAttack("trailer-flood", [&] {
    statuses = flood(3, std::string(kChunkedPost) + "1\r\n{\r\n0\r\n", trailers);
  });
  for (const int status : statuses) EXPECT_EQ(status, 411);
}

TEST_F(HostileClientTest, HeaderFloodGets431AndIsBounded) {
  std::string fields;
  while (fields.size() < 64 * 1024) fields += "X-Flood: " + std::string(100, 'h') + "\r\n";
  std::vector<int> statuses;
  underAttack("header-flood",
              [&] { statuses = flood(3, "GET /v1/partitions HTTP/1.1\r\nHost: x\r\n", fields); });
  for (const int status : statuses) EXPECT_EQ(status, 431);
}

TEST_F(HostileClientTest, TwelveHundredIdleConnectionsDoNotStarveProbes) {
  std::vector<std::unique_ptr<Socket>> crowd;
  underAttack("1200-idle-connections", [&] {
    for (int i = 0; i < 1200; ++i) {
      crowd.push_back(std::make_unique<Socket>(port_));
      ASSERT_TRUE(crowd.back()->ok()) << "connection " << i;
    }
    // Held while the poller probes for a while.
    std::this_thread::sleep_for(milliseconds(2000));
  });
  // The API itself sheds the crowd: the connections beyond its caps were answered and closed.
  EXPECT_TRUE(crowd.back()->peerClosed());
}

TEST_F(HostileClientTest, SlowlorisCrowdDoesNotStarveProbes) {
  underAttack("slowloris-1100", [&] {
    // More than max_connections (1024), each sending a byte of its header every 200 ms.
    std::vector<std::unique_ptr<Socket>> crowd;
    for (int i = 0; i < 1100; ++i) crowd.push_back(std::make_unique<Socket>(port_));
    const std::string request = "GET /v1/partitions HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    const auto deadline = Clock::now() + kAttack;
    for (size_t byte = 0; Clock::now() < deadline; ++byte) {
      for (auto& socket : crowd) {
        (void)socket->send(std::string(1, byte < request.size() ? request[byte] : 's'));
      }
      std::this_thread::sleep_for(milliseconds(200));  // the attack's pace
    }
  });
}

}  // namespace
}  // namespace fraud::api
