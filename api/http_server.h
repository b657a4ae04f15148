#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "api/options.h"

namespace fraud::api {

class Router;

// The API's HTTP/1.1 server (Boost.Beast, kept private to this library) on its own I/O
// threads: keep-alive, optional TLS, the limits and timeouts of ApiOptions.
//
// Limits: a request line plus headers over max_header_bytes gets 431, a body over
// max_body_bytes 413, a request that has not arrived whole within read_timeout_ms of its
// first byte 408; each of these closes the connection. A connection over max_connections is
// accepted, answered 503 with Retry-After and closed (over TLS: closed without a handshake, so
// a flood costs no key exchange); probes and scrapes get through again as soon as slots free.
//
// Thread-safety: start() and stop() from one thread (the service's); the router is called
// from the I/O threads.
class HttpServer {
 public:
  // `router` must outlive the server. `options` should have passed validate().
  HttpServer(ApiOptions options, const Router& router);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads: nothing on success, else why not (address in
  // use, unreadable TLS files, ...). Call at most once.
  [[nodiscard]] std::optional<std::string> start();
  // The bound port once start() succeeded (the ephemeral one when options.port is 0).
  [[nodiscard]] uint16_t port() const;
  // Stops accepting, closes idle connections at once, lets requests in flight finish within
  // `grace`, closes whatever is left and joins the threads. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(2));

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fraud::api
