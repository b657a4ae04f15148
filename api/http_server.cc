#include "api/http_server.h"

#include <openssl/ssl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <future>
#include <thread>
#include <vector>

#include "api/file_watch.h"
#include "api/http_connection.h"
#include "api/router.h"
#include "api/thread_priority.h"

namespace fraud::api {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

// TLS 1.2's ECDHE key exchanges with AEAD ciphers (Mozilla's "intermediate" list); TLS 1.3's
// suites are all AEAD and stay OpenSSL's default.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// The server's TLS context from PEM files; an error saying why when they do not load.
base::Result<std::shared_ptr<asio::ssl::context>> makeTlsContext(const std::string& cert_file,
                                                                 const std::string& key_file) {
  auto tls = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  error_code ec;
  tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::no_compression,
                   ec);
  SSL_CTX* native = tls->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  // No renegotiation (a client-driven CPU drain, CVE-2011-1473); the server picks the cipher.
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    return base::Status::failed("OpenSSL supports none of the TLS 1.2 ciphers");
  }
  if (tls->use_certificate_chain_file(cert_file, ec); ec) {
    return base::Status::failed("cannot use TLS certificate file '" + cert_file +
                                "': " + ec.message());
  }
  if (tls->use_private_key_file(key_file, asio::ssl::context::pem, ec); ec) {
    return base::Status::failed("cannot use TLS key file '" + key_file + "': " + ec.message());
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    return base::Status::failed("the TLS key does not match the certificate");
  }
  return tls;
}

// One listening socket with its own I/O threads, view threads and connection hub.
class Listener {
 public:
  Listener(detail::Listener kind, const ApiOptions& options, const Router& router,
           uint32_t io_threads, uint32_t view_threads)
      : io_threads_(io_threads),
        view_pool_(view_threads),
        hub_(kind, options, router, view_pool_) {}

  ~Listener() { stop(std::chrono::seconds(2)); }

  detail::ConnectionHub& hub() { return hub_; }
  uint16_t port() const { return port_; }
  asio::io_context& ioc() { return *ioc_; }
  // The acceptor's strand: tls_ is read and written only there.
  [[nodiscard]] asio::any_io_executor strand() { return acceptor_->get_executor(); }
  void setTls(std::shared_ptr<asio::ssl::context> tls) { tls_ = std::move(tls); }

  base::Status listen(const std::string& address_text, int32_t port) {
    ioc_.emplace(static_cast<int>(io_threads_));
    error_code ec;
    const auto address = asio::ip::make_address(address_text, ec);
    if (ec) return base::Status::failed("invalid listen address '" + address_text + "'");
    const tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
    acceptor_.emplace(asio::make_strand(*ioc_));
    const std::string where = address_text + ":" + std::to_string(port);
    if (acceptor_->open(endpoint.protocol(), ec); ec) {
      return base::Status::failed("cannot open a socket for " + where + ": " + ec.message());
    }
    acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
    if (acceptor_->bind(endpoint, ec); ec) {
      return base::Status::failed("cannot bind " + where + ": " + ec.message());
    }
    if (acceptor_->listen(asio::socket_base::max_listen_connections, ec); ec) {
      return base::Status::failed("cannot listen on " + where + ": " + ec.message());
    }
    port_ = acceptor_->local_endpoint(ec).port();
    return {};
  }

  void start() {
    accept();
    // Keeps the I/O threads running while the only work left is an answer on the view pool.
    work_.emplace(ioc_->get_executor());
    for (uint32_t i = 0; i < io_threads_; ++i)
      threads_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "fd-http-io");
        if (!hub_.probesOnly()) niceThisThread(hub_.options().thread_nice);
        run();
      });
  }

  // Stops accepting and cancels `also` (a timer on the acceptor's strand), then closes the
  // connections as HttpServer::stop() says.
  void stop(std::chrono::milliseconds grace, std::optional<asio::steady_timer>* also = nullptr) {
    if (!ioc_) return;
    hub_.setStopping();
    if (acceptor_) {
      std::promise<void> closed;
      asio::post(acceptor_->get_executor(), [this, &closed, also] {
        error_code ec;
        acceptor_->close(ec);
        retry_.reset();
        if (also != nullptr) also->reset();
        closed.set_value();
      });
      if (threads_.empty()) {
        ioc_->poll();  // never started: run the close here
      }
      closed.get_future().wait();
    }
    if (!hub_.shutdownAll(false, grace)) {
      hub_.log().warn("HTTP server: closing connections with requests still in flight");
      (void)hub_.shutdownAll(true, std::chrono::seconds(1));
    }
    view_pool_.join();  // answers still being computed finish; their writes are dropped below
    work_.reset();
    ioc_->stop();
    for (auto& thread : threads_) thread.join();
    threads_.clear();
    acceptor_.reset();
    ioc_.reset();  // destroys handlers still queued, and with them their connections
  }

 private:
  void accept() {
    acceptor_->async_accept(asio::make_strand(*ioc_), [this](error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
      if (ec) {
        // Out of file descriptors and the like: back off instead of spinning.
        hub_.log().warn("HTTP server: accept failed: {}", ec.message());
        retry_.emplace(acceptor_->get_executor(), std::chrono::milliseconds(100));
        retry_->async_wait([this](error_code wait_ec) {
          if (!wait_ec && acceptor_->is_open()) accept();
        });
        return;
      }
      detail::serveConnection(hub_, std::move(socket), tls_);
      accept();
    });
  }

  void run() {
    for (;;) {
      try {
        ioc_->run();
        return;
      } catch (const std::exception& e) {
        hub_.log().error("HTTP server: handler failed: {}", e.what());
      }
    }
  }

  const uint32_t io_threads_;
  asio::thread_pool view_pool_;
  detail::ConnectionHub hub_;
  std::shared_ptr<asio::ssl::context> tls_;  // on the acceptor's strand only
  std::optional<asio::io_context> ioc_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::optional<tcp::acceptor> acceptor_;  // used on its strand only
  std::optional<asio::steady_timer> retry_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(ApiOptions options, Router& router) : options_(std::move(options)), router_(router) {}

  ~Impl() { stop(std::chrono::seconds(2)); }

  base::Status start() {
    if (started_) return base::Status::failed("the server was started already");
    started_ = true;
    std::shared_ptr<asio::ssl::context> tls;
    if (options_.tls()) {
      auto made = makeTlsContext(options_.tls_cert_file, options_.tls_key_file);
      if (!made) return made.status();
      tls = std::move(*made);
    }
    api_.emplace(detail::Listener::kApi, options_, router_, options_.threads,
                 options_.view_threads);
    if (auto problem = api_->listen(options_.address, options_.port); !problem.ok()) {
      api_.reset();
      return problem;
    }
    api_->setTls(std::move(tls));
    if (options_.probe_port >= 0) {
      probe_.emplace(detail::Listener::kProbe, options_, router_, 1, 1);
      if (auto problem = probe_->listen(options_.address, options_.probe_port); !problem.ok()) {
        probe_.reset();
        api_.reset();
        return problem.withPrefix("probe port: ");
      }
    }
    api_->start();
    if (probe_) probe_->start();
    startWatching();
    return {};
  }

  uint16_t port() const { return api_ ? api_->port() : 0; }
  uint16_t probePort() const { return probe_ ? probe_->port() : 0; }

  void stop(std::chrono::milliseconds grace) {
    if (probe_) probe_->stop(grace);
    if (api_) api_->stop(grace, &reload_timer_);
    probe_.reset();
    api_.reset();
  }

 private:
  // Checks the token and TLS files every reload_interval_ms, on the API acceptor's strand.
  void startWatching() {
    if (options_.tls())
      tls_watch_.emplace(std::vector{options_.tls_cert_file, options_.tls_key_file});
    if (!options_.api_token_file.empty()) {
      token_watch_.emplace(std::vector{options_.api_token_file});
    }
    if (!tls_watch_ && !token_watch_) return;
    asio::post(api_->strand(), [this] {
      reload_timer_.emplace(api_->strand());
      scheduleCheck();
    });
  }

  void scheduleCheck() {
    reload_timer_->expires_after(std::chrono::milliseconds(options_.reload_interval_ms));
    reload_timer_->async_wait([this](error_code ec) {
      if (ec || !reload_timer_) return;
      checkFiles();
      scheduleCheck();
    });
  }

  void checkFiles() {
    auto& log = api_->hub().log();
    const HttpMetrics& metrics = router_.metrics();
    if (token_watch_ && token_watch_->changed()) {
      if (auto token = readTokenFile(options_.api_token_file)) {
        router_.replaceToken(*token);
        metrics.reloaded("token", true);
        log.info("HTTP server: reloaded the API token from {}", options_.api_token_file);
      } else {
        metrics.reloaded("token", false);
        log.error("HTTP server: {}; keeping the current token", token.message());
      }
    }
    if (tls_watch_ && tls_watch_->changed()) {
      if (auto tls = makeTlsContext(options_.tls_cert_file, options_.tls_key_file)) {
        api_->setTls(std::move(*tls));  // on the acceptor's strand, where tls_ lives
        metrics.reloaded("tls", true);
        log.info("HTTP server: reloaded the TLS certificate {}", options_.tls_cert_file);
      } else {
        metrics.reloaded("tls", false);
        log.error("HTTP server: TLS reload failed: {}; keeping the current certificate",
                  tls.message());
      }
    }
  }

  const ApiOptions options_;
  Router& router_;
  bool started_ = false;
  std::optional<Listener> api_;
  std::optional<Listener> probe_;
  // On the API acceptor's strand only.
  std::optional<asio::steady_timer> reload_timer_;
  std::optional<FileWatch> tls_watch_;
  std::optional<FileWatch> token_watch_;
};

HttpServer::HttpServer(ApiOptions options, Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() = default;

base::Status HttpServer::start() { return impl_->start(); }

uint16_t HttpServer::port() const { return impl_->port(); }

uint16_t HttpServer::probePort() const { return impl_->probePort(); }

void HttpServer::stop(std::chrono::milliseconds grace) { impl_->stop(grace); }

}  // namespace fraud::api
