#pragma once

// Internal to fraud::api (uses Boost.Beast): one connection's session, shared by plain and TLS
// streams, and the units it is made of. Include only from api/http_connection.cc.

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <optional>
#include <string>
#include <type_traits>

#include "api/http_connection.h"
#include "api/http_metrics.h"
#include "api/request_reader.h"
#include "api/router.h"
#include "api/thread_priority.h"

namespace fraud::api::detail {

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
// Bytes asked of one read. What a connection buffers is bounded by the request reader's cap
// (api/request_reader.h) plus this.
constexpr size_t kReadSize = 4096;

inline std::string endpointText(const tcp::socket& socket) {
  error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  const std::string address = peer.address().to_string();
  const std::string port = std::to_string(peer.port());
  return peer.address().is_v6() ? "[" + address + "]:" + port : address + ":" + port;
}

// A deadline on a connection's current read. Beast's own stream timeout would close the socket,
// and a timed-out request must still get its 408, so expiry only cancels the pending read (with
// `cancel`) and sets timedOut(). On the connection's strand only.
class ReadDeadline {
 public:
  explicit ReadDeadline(const asio::any_io_executor& executor) : timer_(executor) {}

  // `keep` (the connection's shared_ptr) keeps the connection alive while the timer waits.
  template <class Keep, class Cancel>
  void arm(std::chrono::milliseconds timeout, Keep keep, Cancel cancel) {
    const uint64_t generation = ++generation_;
    timed_out_ = false;
    timer_.expires_after(timeout);
    timer_.async_wait(
        [this, keep = std::move(keep), cancel = std::move(cancel), generation](error_code ec) {
          if (ec || generation != generation_) return;
          timed_out_ = true;
          cancel();
        });
  }
  void disarm() {
    ++generation_;
    timer_.cancel();
  }
  [[nodiscard]] bool timedOut() const { return timed_out_; }

 private:
  asio::steady_timer timer_;
  uint64_t generation_ = 0;
  bool timed_out_ = false;
};

// The answer a request gets on the I/O thread: the probe port's 404 for a path it does not serve,
// an answer that reads no view, a card lookup the view answers without waiting or reading disk
// (Router::tryHandleInline: a card in the state's memory cache, kNotHeld, kRestoring, or a
// refusal), or 503 busy when the view pool is full. Nothing when the answer must wait on the
// view: a place on the view pool was taken (ConnectionHub::beginViewCall).
inline std::optional<HttpResponse> immediateAnswer(ConnectionHub& hub, const HttpRequest& request) {
  if (hub.probesOnly()) {
    const std::string_view route = Router::routeOf(request.target);
    if (route != kRouteHealth && route != kRouteReady && route != kRouteMetrics) {
      return hub.router().reject(request.target, 404, "not_found",
                                 "the probe port serves /healthz, /readyz and /metrics only");
    }
  }
  if (!Router::readsView(request.target)) return hub.router().handle(request);
  if (auto answer = hub.router().tryHandleInline(request)) return answer;
  if (!hub.beginViewCall()) {
    hub.router().metrics().viewBusy();
    HttpResponse busy = hub.router().reject(request.target, 503, "busy",
                                            "too many answers are waiting for the service");
    busy.headers.emplace_back("Retry-After", "1");
    return busy;
  }
  return std::nullopt;
}

template <class Stream>
class Session final : public Connection, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  template <class... StreamArgs>
  Session(ConnectionHub& hub, std::string client, std::shared_ptr<asio::ssl::context> tls,
          StreamArgs&&... stream_args)
      : hub_(hub),
        client_(std::move(client)),
        tls_(std::move(tls)),
        stream_(std::forward<StreamArgs>(stream_args)...),
        deadline_(stream_.get_executor()),
        answer_deadline_(stream_.get_executor()) {}

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
  bool receivedSome() const { return buffer_.size() > 0 || (reader_ && reader_->gotSome()); }
  const ApiOptions& options() const { return hub_.options(); }

  void armDeadline(std::chrono::milliseconds timeout) {
    deadline_.arm(timeout, this->shared_from_this(),
                  [this] { beast::get_lowest_layer(stream_).cancel(); });
  }

  void disarmDeadline() { deadline_.disarm(); }

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

  // Reads one request through the RequestReader, which bounds every byte of it.
  void readRequest() {
    phase_ = Phase::kReading;
    reader_.emplace(options());
    armDeadline(std::chrono::milliseconds(options().read_timeout_ms));
    parseBuffered();
  }

  void parseBuffered() {
    if (buffer_.size() > 0) {
      const auto data = buffer_.data();
      buffer_.consume(
          reader_->feed(std::string_view(static_cast<const char*>(data.data()), data.size())));
    }
    switch (reader_->progress()) {
      case RequestReader::Progress::kDone:
        disarmDeadline();
        answer();
        return;
      case RequestReader::Progress::kRefused: {
        disarmDeadline();
        const RequestRefusal& refusal = reader_->refusal();
        answerError(refusal.status, refusal.code, refusal.message);
        return;
      }
      case RequestReader::Progress::kNeedMore:
        break;
    }
    stream_.async_read_some(buffer_.prepare(kReadSize),
                            [self = this->shared_from_this()](error_code ec, size_t n) {
                              if (self->phase_ != Phase::kReading) return;  // closed meanwhile
                              if (ec) {
                                self->disarmDeadline();
                                self->onReadError(ec);
                                return;
                              }
                              self->buffer_.commit(n);
                              self->parseBuffered();
                            });
  }

  void onReadError(error_code ec) {
    if (ec == asio::error::operation_aborted && deadline_.timedOut()) {
      if (receivedSome()) {
        answerError(408, "request_timeout", "the request did not arrive in time");
      } else {
        close();
      }
    } else if (receivedSome() &&
               (ec == asio::error::eof || ec == beast::http::error::end_of_stream)) {
      // Half a request, then the client's FIN: it may still read an answer.
      answerError(400, "bad_request", "the request is not valid HTTP/1.1");
    } else {
      close();
    }
  }

  void answer() {
    HttpRequest request = reader_->take();
    request.client = client_;
    const unsigned version = reader_->version();
    const bool keep_alive = reader_->keepAlive();
    if (auto now = immediateAnswer(hub_, request)) {
      write(*std::move(now), request.method, version, keep_alive && !hub_.stopping());
      return;
    }
    answerFromView(std::move(request), version, keep_alive);
  }

  // Off the I/O threads: a slow view read must not hold up probes, scrapes or other clients;
  // and under a deadline: a view that does not answer in time gets the client a 503 now.
  // A place on the view pool is taken (immediateAnswer); the pool's task gives it back.
  void answerFromView(HttpRequest request, unsigned version, bool keep_alive) {
    phase_ = Phase::kAnswering;
    const uint64_t call = ++answer_generation_;
    answer_deadline_.expires_after(std::chrono::milliseconds(options().view_timeout_ms));
    answer_deadline_.async_wait([self = this->shared_from_this(), call, target = request.target,
                                 method = request.method, version, keep_alive](error_code ec) {
      if (ec || self->phase_ != Phase::kAnswering || call != self->answer_generation_) return;
      self->hub_.router().metrics().viewTimedOut();
      HttpResponse late = self->hub_.router().reject(
          target, 503, "view_timeout", "the service did not answer in time; try again");
      late.headers.emplace_back("Retry-After", "1");
      self->write(std::move(late), method, version, keep_alive && !self->hub_.stopping());
    });
    asio::post(hub_.viewPool(), [self = this->shared_from_this(), request = std::move(request),
                                 version, keep_alive, call]() mutable {
      if (!self->hub_.probesOnly()) niceThisThread(self->options().thread_nice);
      double seconds = 0;
      HttpResponse response = self->hub_.router().handleUncounted(request, seconds);
      self->hub_.endViewCall();
      asio::dispatch(self->stream_.get_executor(), [self, response = std::move(response),
                                                    method = std::move(request.method), version,
                                                    keep_alive, call, seconds]() mutable {
        // Closed meanwhile, or answered 503 at the deadline (that answer was counted).
        if (self->phase_ != Phase::kAnswering || call != self->answer_generation_) return;
        self->hub_.router().count(response, seconds);
        self->hub_.router().metrics().viewAnswered(ViewPath::kPool);
        self->answer_deadline_.cancel();
        self->write(std::move(response), method, version, keep_alive && !self->hub_.stopping());
      });
    });
  }

  void answerError(int status, std::string_view code, std::string_view message) {
    std::string target;
    std::string method = "-";
    if (reader_) {  // the start line's parts, when the header was read; else empty
      target = reader_->target();
      method = reader_->method();
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
    answer_deadline_.cancel();
    error_code ec;
    socket().shutdown(tcp::socket::shutdown_both, ec);
    socket().close(ec);
  }

  ConnectionHub& hub_;
  const std::string client_;
  const std::shared_ptr<asio::ssl::context> tls_;  // before stream_, which uses it
  Stream stream_;
  ReadDeadline deadline_;
  asio::steady_timer answer_deadline_;  // the view answer's deadline
  uint64_t answer_generation_ = 0;      // which view answer phase_ kAnswering waits for
  Phase phase_ = Phase::kReading;
  beast::flat_buffer buffer_;
  std::optional<RequestReader> reader_;
  std::optional<http::response<http::string_body>> response_;
};

}  // namespace fraud::api::detail
