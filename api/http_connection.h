#pragma once

// Internal to fraud::api (uses Boost): one HTTP connection. Include only from api/*.cc.

#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <string>
#include <unordered_map>

#include "api/options.h"
#include "detectors/base/mutex.h"

namespace spdlog {
class logger;
}

namespace fraud::api {

class Router;

namespace detail {

class Connection {
 public:
  virtual ~Connection() = default;
  // From any thread. Not forced: close now if no request is in flight, else after its
  // answer. Forced: close now.
  virtual void shutdown(bool force) = 0;
};

// Which listener a hub serves: the API (every route, its caps and connection metrics) or the
// probes (/healthz, /readyz, /metrics only; probe_max_connections; not in the connection metrics).
enum class Listener { kApi, kProbe };

// What the connections of one listener share. Thread-safe.
class ConnectionHub {
 public:
  // `view_pool` runs the answers that read the service view (Router::readsView).
  ConnectionHub(Listener listener, const ApiOptions& options, const Router& router,
                boost::asio::thread_pool& view_pool);

  const ApiOptions& options() const { return options_; }
  const Router& router() const { return router_; }
  [[nodiscard]] bool probesOnly() const { return listener_ == Listener::kProbe; }
  boost::asio::thread_pool& viewPool() const { return view_pool_; }
  // A place on the view pool for one answer: false when max_pending_view_answers are waiting
  // or running (then answer 503 busy). Each true must be followed by one endViewCall().
  [[nodiscard]] bool beginViewCall();
  void endViewCall();
  spdlog::logger& log() const { return *log_; }
  [[nodiscard]] bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  void setStopping() { stopping_.store(true, std::memory_order_release); }

  enum class Admission {
    kServe,   // under max_connections and max_connections_per_client
    kRefuse,  // over one: answer 503 and close
    kDrop,    // over one, and as many are being refused already: close at once
  };
  // Registers a new connection from `peer`; unless kDrop, it must call leave() when it closes.
  [[nodiscard]] Admission enter(const std::shared_ptr<Connection>& connection,
                                const boost::asio::ip::address& peer) FRAUD_EXCLUDES(mutex_);
  void leave(const Connection* connection) FRAUD_EXCLUDES(mutex_);
  // Calls shutdown(force) on every open connection, then waits up to `timeout` for all to
  // leave. True when none is left.
  bool shutdownAll(bool force, std::chrono::milliseconds timeout) FRAUD_EXCLUDES(mutex_);

 private:
  struct Entry {
    std::weak_ptr<Connection> connection;
    bool admitted = false;
    std::string peer;  // the source address, a key of per_client_ when admitted
  };
  const Listener listener_;
  const uint32_t max_connections_;
  const uint32_t max_per_client_;
  const ApiOptions& options_;
  const Router& router_;
  boost::asio::thread_pool& view_pool_;
  std::shared_ptr<spdlog::logger> log_;
  std::atomic<bool> stopping_{false};  // atomic: read without the lock
  base::Mutex mutex_;
  std::condition_variable empty_;  // connections_ became empty
  std::unordered_map<const Connection*, Entry> connections_ FRAUD_GUARDED_BY(mutex_);
  size_t admitted_ FRAUD_GUARDED_BY(mutex_) = 0;
  size_t refused_ FRAUD_GUARDED_BY(mutex_) = 0;
  std::unordered_map<std::string, uint32_t> per_client_ FRAUD_GUARDED_BY(mutex_);  // admitted
  std::atomic<uint32_t> pending_view_{0};  // atomic: counted without the lock
};

// Serves one accepted socket (its executor must be a strand) until it closes. `tls` is null
// for plain HTTP; the connection holds it, so a reload may replace the server's context.
void serveConnection(ConnectionHub& hub, boost::asio::ip::tcp::socket socket,
                     std::shared_ptr<boost::asio::ssl::context> tls);

}  // namespace detail
}  // namespace fraud::api
