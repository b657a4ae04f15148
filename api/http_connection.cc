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
#include "api/request_reader.h"
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
// Bytes asked of one read. What a connection buffers is bounded by the request reader's cap
// (api/request_reader.h) plus this.
constexpr size_t kReadSize = 4096;

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
    if (ec == asio::error::operation_aborted && timed_out_) {
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
    if (hub_.probesOnly()) {
      const std::string_view route = Router::routeOf(request.target);
      if (route != kRouteHealth && route != kRouteReady && route != kRouteMetrics) {
        write(hub_.router().reject(request.target, 404, "not_found",
                                   "the probe port serves /healthz, /readyz and /metrics only"),
              request.method, version, keep_alive && !hub_.stopping());
        return;
      }
    }
    if (!Router::readsView(request.target)) {
      write(hub_.router().handle(request), request.method, version, keep_alive && !hub_.stopping());
      return;
    }
    if (!hub_.beginViewCall()) {
      hub_.router().metrics().viewBusy();
      HttpResponse busy = hub_.router().reject(request.target, 503, "busy",
                                               "too many answers are waiting for the service");
      busy.headers.emplace_back("Retry-After", "1");
      write(std::move(busy), request.method, version, keep_alive && !hub_.stopping());
      return;
    }
    // Off the I/O threads: a slow view read must not hold up probes, scrapes or other clients;
    // and under a deadline: a view that does not answer in time gets the client a 503 now.
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
      double seconds = 0;
      HttpResponse response = self->hub_.router().handleUncounted(request, seconds);
      self->hub_.endViewCall();
      asio::dispatch(self->stream_.get_executor(), [self, response = std::move(response),
                                                    method = std::move(request.method), version,
                                                    keep_alive, call, seconds]() mutable {
        // Closed meanwhile, or answered 503 at the deadline (that answer was counted).
        if (self->phase_ != Phase::kAnswering || call != self->answer_generation_) return;
        self->hub_.router().count(response, seconds);
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
  asio::steady_timer deadline_;
  asio::steady_timer answer_deadline_;  // the view answer's deadline
  uint64_t deadline_generation_ = 0;
  uint64_t answer_generation_ = 0;  // which view answer phase_ kAnswering waits for
  bool timed_out_ = false;
  Phase phase_ = Phase::kReading;
  beast::flat_buffer buffer_;
  std::optional<RequestReader> reader_;
  std::optional<http::response<http::string_body>> response_;
};

template <class Stream, class... StreamArgs>
void serve(ConnectionHub& hub, const asio::ip::address& peer, std::string client,
           std::shared_ptr<asio::ssl::context> tls, StreamArgs&&... stream_args) {
  auto session = std::make_shared<Session<Stream>>(hub, std::move(client), std::move(tls),
                                                   std::forward<StreamArgs>(stream_args)...);
  switch (hub.enter(session, peer)) {
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

ConnectionHub::ConnectionHub(Listener listener, const ApiOptions& options, const Router& router,
                             asio::thread_pool& view_pool)
    : listener_(listener),
      max_connections_(listener == Listener::kApi ? options.max_connections
                                                  : options.probe_max_connections),
      max_per_client_(listener == Listener::kApi ? options.max_connections_per_client
                                                 : options.probe_max_connections),
      options_(options),
      router_(router),
      view_pool_(view_pool) {
  log_ = spdlog::get("http");
  if (!log_) log_ = spdlog::default_logger()->clone("http");
}

bool ConnectionHub::beginViewCall() {
  uint32_t pending = pending_view_.load(std::memory_order_relaxed);
  do {
    if (pending >= options_.max_pending_view_answers) return false;
  } while (!pending_view_.compare_exchange_weak(pending, pending + 1, std::memory_order_relaxed));
  return true;
}

void ConnectionHub::endViewCall() { pending_view_.fetch_sub(1, std::memory_order_relaxed); }

ConnectionHub::Admission ConnectionHub::enter(const std::shared_ptr<Connection>& connection,
                                              const asio::ip::address& peer) {
  const bool api = listener_ == Listener::kApi;
  std::string key = peer.to_string();
  std::lock_guard lock(mutex_);
  Admission admission = Admission::kServe;
  const bool over_total = admitted_ >= max_connections_;
  const auto client = per_client_.find(key);
  const bool over_client = client != per_client_.end() && client->second >= max_per_client_;
  if (over_total || over_client) {
    if (api) {
      router_.metrics().connectionRejected();
      if (over_client && !over_total) router_.metrics().clientConnectionRejected();
    }
    if (refused_ >= max_connections_ || (api && options_.tls())) return Admission::kDrop;
    admission = Admission::kRefuse;
  }
  const bool admitted = admission == Admission::kServe;
  if (admitted) {
    ++admitted_;
    ++per_client_[key];
    if (api) router_.metrics().connectionOpened();
  } else {
    ++refused_;
  }
  connections_[connection.get()] = Entry{connection, admitted, std::move(key)};
  return admission;
}

void ConnectionHub::leave(const Connection* connection) {
  std::lock_guard lock(mutex_);
  const auto it = connections_.find(connection);
  if (it == connections_.end()) return;  // dropped at entry
  if (it->second.admitted) {
    --admitted_;
    if (const auto client = per_client_.find(it->second.peer);
        client != per_client_.end() && --client->second == 0) {
      per_client_.erase(client);
    }
    if (listener_ == Listener::kApi) router_.metrics().connectionClosed();
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

void serveConnection(ConnectionHub& hub, tcp::socket socket,
                     std::shared_ptr<asio::ssl::context> tls) {
  std::string client = endpointText(socket);
  error_code ec;
  const asio::ip::address peer = socket.remote_endpoint(ec).address();
  if (tls) {
    asio::ssl::context& context = *tls;
    serve<TlsStream>(hub, peer, std::move(client), std::move(tls), std::move(socket), context);
  } else {
    serve<PlainStream>(hub, peer, std::move(client), nullptr, std::move(socket));
  }
}

}  // namespace fraud::api::detail
