#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fraud::api::testing {

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  bool keep_alive = false;

  [[nodiscard]] std::string header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// A real HTTP/1.1 client (Boost.Beast, synchronous) on one keep-alive connection to
// 127.0.0.1:port. Not thread-safe: one per thread.
class HttpClient {
 public:
  explicit HttpClient(uint16_t port);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request and reads its answer; nothing (and `error()` says why) on an I/O error.
  [[nodiscard]] std::optional<Reply> send(
      const std::string& method, const std::string& target, const std::string& body = "",
      const std::vector<std::pair<std::string, std::string>>& headers = {});
  [[nodiscard]] std::optional<Reply> get(const std::string& target, const std::string& token = "");
  [[nodiscard]] std::optional<Reply> lookup(const std::string& card, const std::string& token = "");
  [[nodiscard]] const std::string& error() const { return error_; }
  // True when the server has closed the connection (a read sees end of stream in `timeout`).
  [[nodiscard]] bool closedByServer(std::chrono::milliseconds timeout);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
};

// A plain TCP connection for what a well-behaved client never does: half requests, garbage,
// huge headers. POSIX sockets, so it shares nothing with the server's code.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  [[nodiscard]] bool connected() const { return fd_ >= 0; }
  // False when the peer no longer takes data.
  bool send(const std::string& data);
  // Sends FIN: the server sees the end of the stream; answers can still be read.
  void shutdownSend();
  // Reads until the server closes the connection or `timeout` passes; `closed` tells which.
  [[nodiscard]] std::string readUntilClosed(std::chrono::milliseconds timeout, bool& closed);

 private:
  int fd_ = -1;
};

// Runs `command` with /bin/sh; its exit status and what it wrote on stdout (stderr joined
// when `with_stderr`).
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
[[nodiscard]] CommandResult runCommand(const std::string& command, bool with_stderr = true);

// A fresh directory under TMPDIR (or /tmp), removed with its content at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  void write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

// Polls `condition` until it holds or `timeout` passes; returns its last value.
template <class Condition>
bool waitFor(Condition condition, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return condition();
    std::this_thread::sleep_for(poll);
  }
  return true;
}

}  // namespace fraud::api::testing
