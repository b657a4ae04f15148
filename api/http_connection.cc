#include "api/http_connection.h"

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <optional>
#include <type_traits>
#include <vector>

#include "api/http_metrics.h"
#include "api/router.h"

namespace fraud::api::detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = beast::error_code;
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// After a closing answer, how long to read and discard what the client still sends, so that
// closing does not reset the connection before the client has read the answer.
constexpr std::chrono::milliseconds kLingerTimeout{1000};

std::string endpointText(const tcp::socket& socket) {
  error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  const std::string address = peer.address().to_string();
  const std::string port = std::to_string(peer.port());
  return peer.address().is_v6() ? "[" + address + "]:" + port : address + ":" + port;
}

template <class Stream>
class Session final : public Connection, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  template <class... StreamArgs>
  Session(ConnectionHub& hub, std::string client, StreamArgs&&... stream_args)
      : hub_(hub),
        client_(std::move(client)),
        stream_(std::forward<StreamArgs>(stream_args)...),
        deadline_(stream_.get_executor()) {}

  ~Session() override { hub_.leave(this); }

  // Starts serving; `refuse` answers 503 and closes instead.
  void start(bool refuse) {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this(), refuse] {
      if (refuse) {
        self->refuse();
      } else if constexpr (kTls) {
        self->handshake();
      } else {
        self->readRequest();
      }
    });
  }

  void shutdown(bool force) override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this(), force] {
      const bool idle = self->phase_ == Phase::kIdle || self->phase_ == Phase::kHandshake ||
                        (self->phase_ == Phase::kReading && !self->receivedSome());
      if (force || idle) self->close();
    });
  }

 private:
  enum class Phase { kHandshake, kIdle, kReading, kAnswering, kWriting, kClosing, kClosed };

  tcp::socket& socket() { return beast::get_lowest_layer(stream_).socket(); }
  bool receivedSome() const { return buffer_.size() > 0 || (parser_ && parser_->got_some()); }
  const ApiOptions& options() const { return hub_.options(); }

  // A deadline on the current read. Beast's own stream timeout would close the socket, and a
  // timed-out request must still get its 408, so expiry only cancels the pending read.
  void armDeadline(std::chrono::milliseconds timeout) {
    const uint64_t generation = ++deadline_generation_;
    timed_out_ = false;
    deadline_.expires_after(timeout);
    deadline_.async_wait([self = this->shared_from_this(), generation](error_code ec) {
      if (ec || generation != self->deadline_generation_) return;
      self->timed_out_ = true;
      beast::get_lowest_layer(self->stream_).cancel();
    });
  }

  void disarmDeadline() {
    ++deadline_generation_;
    deadline_.cancel();
  }

  void handshake() {
    phase_ = Phase::kHandshake;
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(
          std::chrono::milliseconds(options().read_timeout_ms));
      stream_.async_handshake(asio::ssl::stream_base::server, [self = this->shared_from_this()](
                                                                  error_code ec) {
        beast::get_lowest_layer(self->stream_).expires_never();
        if (ec) {
          self->hub_.log().debug("TLS handshake with {} failed: {}", self->client_, ec.message());
          self->close();
          return;
        }
        self->readRequest();
      });
    }
  }

  // Between keep-alive requests: wait for the next one's first byte, up to idle_timeout.
  void awaitRequest() {
    if (buffer_.size() > 0) {
      readRequest();
      return;
    }
    phase_ = Phase::kIdle;
    armDeadline(std::chrono::milliseconds(options().idle_timeout_ms));
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](error_code ec, size_t n) {
                              self->disarmDeadline();
                              if (ec || self->phase_ != Phase::kIdle) {
                                self->close();
                                return;
                              }
                              self->buffer_.commit(n);
                              self->readRequest();
                            });
  }

  void readRequest() {
    phase_ = Phase::kReading;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(options().max_header_bytes));
    parser_->body_limit(options().max_body_bytes);
    armDeadline(std::chrono::milliseconds(options().read_timeout_ms));
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](error_code ec, size_t /*bytes*/) {
                       self->disarmDeadline();
                       self->onRead(ec);
                     });
  }

  void onRead(error_code ec) {
    if (phase_ != Phase::kReading) return;  // closed meanwhile
    if (ec == asio::error::operation_aborted && timed_out_) {
      if (receivedSome()) {
        answerError(408, "request_timeout", "the request did not arrive in time");
      } else {
        close();
      }
    } else if (ec == http::error::header_limit) {
      answerError(431, "header_too_large", "the request line and headers are too large");
    } else if (ec == http::error::body_limit) {
      answerError(413, "body_too_large", "the request body is too large");
    } else if (ec == http::error::end_of_stream || ec == asio::error::eof ||
               ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      close();
    } else if (ec) {
      if (receivedSome()) {
        answerError(400, "bad_request", "the request is not valid HTTP/1.1");
      } else {
        close();
      }
    } else {
      answer();
    }
  }

  void answer() {
    auto message = parser_->release();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    for (const auto& field : message) {
      request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    request.body = std::move(message.body());
    request.client = client_;
    const unsigned version = message.version();
    const bool keep_alive = message.keep_alive();
    if (!Router::readsView(request.target)) {
      write(hub_.router().handle(request), request.method, version, keep_alive && !hub_.stopping());
      return;
    }
    // Off the I/O threads: a slow view read must not hold up probes, scrapes or other clients.
    phase_ = Phase::kAnswering;
    asio::post(hub_.viewPool(), [self = this->shared_from_this(), request = std::move(request),
                                 version, keep_alive]() mutable {
      HttpResponse response = self->hub_.router().handle(request);
      asio::dispatch(self->stream_.get_executor(), [self, response = std::move(response),
                                                    method = std::move(request.method), version,
                                                    keep_alive]() mutable {
        if (self->phase_ != Phase::kAnswering) return;  // closed meanwhile
        self->write(std::move(response), method, version, keep_alive && !self->hub_.stopping());
      });
    });
  }

  void answerError(int status, std::string_view code, std::string_view message) {
    std::string target;
    std::string method = "-";
    if (parser_) {  // the start line's parts, when it was read; else empty
      target = std::string(parser_->get().target());
      method = std::string(parser_->get().method_string());
    }
    write(hub_.router().reject(target, status, code, message), method, 11, false);
  }

  void refuse() {
    if constexpr (kTls) {
      close();
    } else {
      HttpResponse response = hub_.router().reject("", 503, "too_many_connections",
                                                   "the server is at its connection limit");
      response.headers.emplace_back("Retry-After", "1");
      write(std::move(response), "-", 11, false);
    }
  }

  void write(HttpResponse response, const std::string& method, unsigned version, bool keep_alive) {
    hub_.log().debug("{} {} {} {} {}B", client_, method, response.route, response.status,
                     response.body.size());
    response_.emplace(static_cast<http::status>(response.status), version);
    response_->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) response_->set(name, value);
    response_->body() = std::move(response.body);
    response_->keep_alive(keep_alive);
    response_->prepare_payload();
    phase_ = Phase::kWriting;
    beast::get_lowest_layer(stream_).expires_after(
        std::chrono::milliseconds(options().read_timeout_ms));
    http::async_write(stream_, *response_,
                      [self = this->shared_from_this(), keep_alive](error_code ec, size_t) {
                        beast::get_lowest_layer(self->stream_).expires_never();
                        self->response_.reset();
                        if (ec) {
                          self->close();
                        } else if (keep_alive && !self->hub_.stopping()) {
                          self->awaitRequest();
                        } else {
                          self->linger();
                        }
                      });
  }

  void linger() {
    phase_ = Phase::kClosing;
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(kLingerTimeout);
      stream_.async_shutdown([self = this->shared_from_this()](error_code) { self->close(); });
    } else {
      error_code ec;
      socket().shutdown(tcp::socket::shutdown_send, ec);
      armDeadline(kLingerTimeout);
      discard();
    }
  }

  void discard() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](error_code ec, size_t) {
                              if (ec) {
                                self->disarmDeadline();
                                self->close();
                              } else {
                                self->discard();
                              }
                            });
  }

  void close() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    disarmDeadline();
    error_code ec;
    socket().shutdown(tcp::socket::shutdown_both, ec);
    socket().close(ec);
  }

  ConnectionHub& hub_;
  const std::string client_;
  Stream stream_;
  asio::steady_timer deadline_;
  uint64_t deadline_generation_ = 0;
  bool timed_out_ = false;
  Phase phase_ = Phase::kReading;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
};

template <class Stream, class... StreamArgs>
void serve(ConnectionHub& hub, std::string client, StreamArgs&&... stream_args) {
  auto session = std::make_shared<Session<Stream>>(hub, std::move(client),
                                                   std::forward<StreamArgs>(stream_args)...);
  switch (hub.enter(session)) {
    case ConnectionHub::Admission::kServe:
      session->start(false);
      break;
    case ConnectionHub::Admission::kRefuse:
      session->start(true);
      break;
    case ConnectionHub::Admission::kDrop:
      break;  // the session's destructor closes the socket
  }
}

}  // namespace

ConnectionHub::ConnectionHub(const ApiOptions& options, const Router& router,
                             asio::thread_pool& view_pool)
    : options_(options), router_(router), view_pool_(view_pool) {
  log_ = spdlog::get("http");
  if (!log_) log_ = spdlog::default_logger()->clone("http");
}

ConnectionHub::Admission ConnectionHub::enter(const std::shared_ptr<Connection>& connection) {
  std::lock_guard lock(mutex_);
  Admission admission = Admission::kServe;
  if (admitted_ >= options_.max_connections) {
    router_.metrics().connectionRejected();
    if (refused_ >= options_.max_connections || options_.tls()) return Admission::kDrop;
    admission = Admission::kRefuse;
  }
  const bool admitted = admission == Admission::kServe;
  connections_[connection.get()] = Entry{connection, admitted};
  if (admitted) {
    ++admitted_;
    router_.metrics().connectionOpened();
  } else {
    ++refused_;
  }
  return admission;
}

void ConnectionHub::leave(const Connection* connection) {
  std::lock_guard lock(mutex_);
  const auto it = connections_.find(connection);
  if (it == connections_.end()) return;  // dropped at entry
  if (it->second.admitted) {
    --admitted_;
    router_.metrics().connectionClosed();
  } else {
    --refused_;
  }
  connections_.erase(it);
  if (connections_.empty()) empty_.notify_all();
}

bool ConnectionHub::shutdownAll(bool force, std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, entry] : connections_) {
      if (auto connection = entry.connection.lock()) open.push_back(std::move(connection));
    }
  }
  for (const auto& connection : open) connection->shutdown(force);
  open.clear();  // a connection's last reference must not be dropped under mutex_
  std::unique_lock lock(mutex_);
  return empty_.wait_for(lock, timeout, [this] { return connections_.empty(); });
}

void serveConnection(ConnectionHub& hub, tcp::socket socket, asio::ssl::context* tls) {
  std::string client = endpointText(socket);
  if (tls) {
    serve<TlsStream>(hub, std::move(client), std::move(socket), *tls);
  } else {
    serve<PlainStream>(hub, std::move(client), std::move(socket));
  }
}

}  // namespace fraud::api::detail
