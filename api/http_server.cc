#include "api/http_server.h"

#include <openssl/ssl.h>
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

#include "api/http_connection.h"
#include "api/router.h"

namespace fraud::api {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

class HttpServer::Impl {
 public:
  Impl(ApiOptions options, const Router& router)
      : options_(std::move(options)),
        view_pool_(options_.view_threads),
        hub_(options_, router, view_pool_) {}

  ~Impl() { stop(std::chrono::seconds(2)); }

  std::optional<std::string> start() {
    if (ioc_) return "the server was started already";
    if (options_.tls()) {
      if (auto problem = loadTls()) return problem;
    }
    ioc_.emplace(static_cast<int>(options_.threads));
    if (auto problem = listen()) {
      acceptor_.reset();
      ioc_.reset();
      return problem;
    }
    accept();
    // Keeps the I/O threads running while the only work left is an answer on the view pool.
    work_.emplace(ioc_->get_executor());
    for (uint32_t i = 0; i < options_.threads; ++i) {
      threads_.emplace_back([this] { run(); });
    }
    return std::nullopt;
  }

  uint16_t port() const { return port_; }

  void stop(std::chrono::milliseconds grace) {
    if (!ioc_) return;
    hub_.setStopping();
    std::promise<void> closed;
    asio::post(acceptor_->get_executor(), [this, &closed] {
      error_code ec;
      acceptor_->close(ec);
      retry_.reset();
      closed.set_value();
    });
    closed.get_future().wait();
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
  std::optional<std::string> loadTls() {
    tls_.emplace(asio::ssl::context::tls_server);
    error_code ec;
    tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                          asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                          asio::ssl::context::no_tlsv1_1,
                      ec);
    SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
    if (tls_->use_certificate_chain_file(options_.tls_cert_file, ec); ec) {
      return "cannot use TLS certificate file '" + options_.tls_cert_file + "': " + ec.message();
    }
    if (tls_->use_private_key_file(options_.tls_key_file, asio::ssl::context::pem, ec); ec) {
      return "cannot use TLS key file '" + options_.tls_key_file + "': " + ec.message();
    }
    if (SSL_CTX_check_private_key(tls_->native_handle()) != 1) {
      return "the TLS key does not match the certificate";
    }
    return std::nullopt;
  }

  std::optional<std::string> listen() {
    error_code ec;
    const auto address = asio::ip::make_address(options_.address, ec);
    if (ec) return "invalid listen address '" + options_.address + "'";
    const tcp::endpoint endpoint(address, static_cast<uint16_t>(options_.port));
    acceptor_.emplace(asio::make_strand(*ioc_));
    const std::string where = options_.address + ":" + std::to_string(options_.port);
    if (acceptor_->open(endpoint.protocol(), ec); ec) {
      return "cannot open a socket for " + where + ": " + ec.message();
    }
    acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
    if (acceptor_->bind(endpoint, ec); ec) return "cannot bind " + where + ": " + ec.message();
    if (acceptor_->listen(asio::socket_base::max_listen_connections, ec); ec) {
      return "cannot listen on " + where + ": " + ec.message();
    }
    port_ = acceptor_->local_endpoint(ec).port();
    return std::nullopt;
  }

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
      detail::serveConnection(hub_, std::move(socket), tls_ ? &*tls_ : nullptr);
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

  const ApiOptions options_;
  asio::thread_pool view_pool_;
  detail::ConnectionHub hub_;
  std::optional<asio::ssl::context> tls_;
  std::optional<asio::io_context> ioc_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::optional<tcp::acceptor> acceptor_;  // used on its strand only
  std::optional<asio::steady_timer> retry_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
};

HttpServer::HttpServer(ApiOptions options, const Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() = default;

std::optional<std::string> HttpServer::start() { return impl_->start(); }

uint16_t HttpServer::port() const { return impl_->port(); }

void HttpServer::stop(std::chrono::milliseconds grace) { impl_->stop(grace); }

}  // namespace fraud::api
