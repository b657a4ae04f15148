#include "tests/integration/api/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fraud::api::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct HttpClient::Impl {
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  uint16_t port = 0;
  bool connected = false;
};

HttpClient::HttpClient(uint16_t port) : impl_(std::make_unique<Impl>()) { impl_->port = port; }

HttpClient::~HttpClient() {
  beast::error_code ec;
  impl_->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

std::optional<Reply> HttpClient::send(
    const std::string& method, const std::string& target, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  beast::error_code ec;
  if (!impl_->connected) {
    impl_->stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), impl_->port),
                          ec);
    if (ec) {
      error_ = "connect: " + ec.message();
      return std::nullopt;
    }
    impl_->connected = true;
  }
  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  if (request.method() == http::verb::unknown) request.method_string(method);
  request.set(http::field::host, "127.0.0.1:" + std::to_string(impl_->port));
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  impl_->stream.expires_after(std::chrono::seconds(30));
  http::write(impl_->stream, request, ec);
  if (ec) {
    error_ = "write: " + ec.message();
    return std::nullopt;
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(impl_->stream, impl_->buffer, parser, ec);
  impl_->stream.expires_never();
  if (ec) {
    error_ = "read: " + ec.message();
    return std::nullopt;
  }
  const auto& response = parser.get();
  Reply reply;
  reply.status = static_cast<int>(response.result_int());
  for (const auto& field : response) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = std::string(field.value());
  }
  reply.body = response.body();
  reply.keep_alive = response.keep_alive();
  return reply;
}

std::optional<Reply> HttpClient::get(const std::string& target, const std::string& token) {
  if (token.empty()) return send("GET", target);
  return send("GET", target, "", {{"Authorization", "Bearer " + token}});
}

std::optional<Reply> HttpClient::lookup(const std::string& card, const std::string& token) {
  std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", "application/json"}};
  if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  return send("POST", "/v1/cards/lookup", nlohmann::json{{"card", card}}.dump(), headers);
}

bool HttpClient::closedByServer(std::chrono::milliseconds timeout) {
  impl_->stream.expires_after(timeout);
  std::array<char, 256> scratch{};
  beast::error_code ec;
  while (!ec) impl_->stream.read_some(asio::buffer(scratch), ec);
  return ec == asio::error::eof || ec == asio::error::connection_reset;
}

RawConnection::RawConnection(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawConnection::send(const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

void RawConnection::shutdownSend() { ::shutdown(fd_, SHUT_WR); }

std::string RawConnection::readUntilClosed(std::chrono::milliseconds timeout, bool& closed) {
  closed = false;
  std::string received;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<char, 4096> buffer{};
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return received;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return received;
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n <= 0) {
      closed = true;  // end of stream or reset: either way the server let go
      return received;
    }
    received.append(buffer.data(), static_cast<size_t>(n));
  }
}

CommandResult runCommand(const std::string& command, bool with_stderr) {
  CommandResult result;
  FILE* pipe = ::popen((command + (with_stderr ? " 2>&1" : "")).c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/fraud-api-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void TempDir::write(const std::string& name, const std::string& content) const {
  std::ofstream(path_ + "/" + name, std::ios::binary) << content;
}

}  // namespace fraud::api::testing
