#include "api/http_connection.h"

#include <spdlog/spdlog.h>

#include <vector>

#include "api/http_session.h"

namespace fraud::api::detail {
namespace {

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
  base::MutexLock lock(mutex_);
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
  base::MutexLock lock(mutex_);
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
    base::MutexLock lock(mutex_);
    for (const auto& [key, entry] : connections_) {
      if (auto connection = entry.connection.lock()) open.push_back(std::move(connection));
    }
  }
  for (const auto& connection : open) connection->shutdown(force);
  open.clear();  // a connection's last reference must not be dropped under mutex_
  base::MutexLock lock(mutex_);
  // As condition_variable::wait_for with a predicate: one deadline, taken with the lock held.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!connections_.empty()) {
    if (!lock.waitUntil(empty_, deadline)) return connections_.empty();
  }
  return true;
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
