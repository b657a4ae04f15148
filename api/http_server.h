#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "api/options.h"
#include "detectors/base/status.h"

namespace fraud::api {

class Router;

// The API's HTTP/1.1 server (Boost.Beast, kept private to this library) on its own I/O
// threads: keep-alive, optional TLS, the limits and timeouts of ApiOptions; and, unless
// probe_port is -1, a second listener for /healthz, /readyz and /metrics with its own thread,
// view thread and connection cap.
//
// Limits (api/request_reader.h): a request line plus headers over max_header_bytes gets 431,
// a body over max_body_bytes 413, a body framed with Transfer-Encoding 411, a request that has
// not arrived whole within read_timeout_ms of its first byte 408; each of these closes the
// connection. A connection over max_connections, or over max_connections_per_client from one
// address, is accepted, answered 503 with Retry-After and closed (over TLS: closed without a
// handshake, so a flood costs no key exchange). An answer that reads the view gets 503 when the
// view overruns view_timeout_ms or max_pending_view_answers are already waiting.
//
// Reload: every reload_interval_ms the TLS files and api_token_file are checked (file_watch.h);
// a changed pair that loads serves new connections, a changed token that passes the rules
// replaces the router's; anything else keeps the old one (logged, fraud_http_reloads_total).
//
// Thread-safety: start() and stop() from one thread (the service's); the router is called
// from the I/O and view threads.
class HttpServer {
 public:
  // `router` must outlive the server (its token is replaced on reload). `options` should have
  // passed validate().
  HttpServer(ApiOptions options, Router& router);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds both listeners and starts their threads: ok, else why not (address in use, unreadable
  // TLS files, ...; the probe listener's errors start "probe port: "). Call at most once.
  [[nodiscard]] base::Status start();
  // The bound port once start() succeeded (the ephemeral one when options.port is 0).
  [[nodiscard]] uint16_t port() const;
  // The probe listener's bound port; 0 when it is off.
  [[nodiscard]] uint16_t probePort() const;
  // Stops accepting, closes idle connections at once, lets requests in flight finish within
  // `grace`, closes whatever is left and joins the threads. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(2));

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fraud::api
