#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/base/status.h"

namespace fraud::api {

inline constexpr size_t kMaxApiTokenBytes = 4096;

// The HTTP API's settings (docs/configuration.md, docs/api.md). The service fills them from
// flags and environment, then calls validate() before building the server.
struct ApiOptions {
  // Listen address: an IPv4 or IPv6 literal (`0.0.0.0`, `::`, `127.0.0.1`).
  std::string address = "0.0.0.0";
  // Listen port, 0..65535; 0 binds an ephemeral port (tests read HttpServer::port()).
  int32_t port = 8080;
  // The probe listener, on `address` too: /healthz, /readyz and /metrics only, plain HTTP, its
  // own I/O thread, view thread and connection cap, so no crowd or flood on `port` reaches it.
  // -1..65535: -1 off, 0 an ephemeral port (HttpServer::probePort()); not `port` itself.
  int32_t probe_port = 8081;
  // Open connections on the probe listener beyond this are answered 503 and closed. 1..10'000.
  uint32_t probe_max_connections = 64;
  // `/readyz` answers 503 while any partition's offset lag exceeds this. 0..2^62.
  int64_t ready_max_lag = 10'000;
  // Where `POST /v1/cards/lookup` redirects for a partition owned elsewhere: `http://` or
  // `https://`, must contain `{member}` (replaced by the owner's instance id), no query or
  // fragment. Empty: never redirect (answer 421 instead).
  std::string peer_url_template;
  // Bearer token required on `/v1/*` when set. The service loads it (file content less one
  // trailing newline, or FRAUD_API_TOKEN). RFC 6750 b64token characters, 1..4096 bytes.
  std::optional<std::string> api_token;
  // The file api_token came from, if any: re-read when it changes (file_watch.h); a new token
  // that cannot be read or breaks the rules above keeps the old one (logged and counted).
  std::string api_token_file;
  // Serve over TLS when both are set (PEM files); neither or both. TLS 1.2+, ECDHE with AEAD
  // ciphers only, no renegotiation. Re-read when either changes; a new pair that does not load
  // keeps the old one (logged and counted).
  std::string tls_cert_file;
  std::string tls_key_file;
  // How often the token and TLS files are checked for a new version. 100..3'600'000 ms.
  int64_t reload_interval_ms = 10'000;
  // Request line plus header fields: 431 beyond this. 1 KiB..1 MiB.
  size_t max_header_bytes = 8 * 1024;
  // Request body: 413 beyond this. 1 KiB..16 MiB. Bodies need Content-Length: a request with
  // Transfer-Encoding gets 411. All bytes read for one request, whatever their framing, are
  // capped at max_header_bytes + max_body_bytes (api/request_reader.h).
  size_t max_body_bytes = 64 * 1024;
  // A request must arrive whole within this from its first byte (a new connection: from
  // accept); else 408 and close. Also bounds a TLS handshake and writing a response.
  // 10..3'600'000 ms.
  int64_t read_timeout_ms = 10'000;
  // A keep-alive connection with no request in flight is closed after this. 10..3'600'000 ms.
  int64_t idle_timeout_ms = 60'000;
  // Open connections beyond this are answered 503 and closed (TLS: closed). 1..100'000.
  uint32_t max_connections = 1024;
  // Open connections from one source address beyond this are refused as above, so one client
  // cannot take every slot. 1..max_connections. Behind a proxy or a sidecar every request comes
  // from the proxy's address: raise it to max_connections there.
  uint32_t max_connections_per_client = 256;
  // Threads running the server's I/O and the answers that need no service view (/healthz,
  // /metrics, /openapi.json). 1..64.
  uint32_t threads = 1;
  // Threads running the answers that read the service view (/readyz, /v1/*), apart from the I/O
  // threads so that a slow view read (a cold RocksDB read, a lock the ingest thread holds) never
  // delays a liveness probe or a scrape; the service's view never calls Kafka (its owner map is
  // kept by a thread of its own). 1..64.
  uint32_t view_threads = 2;
  // An answer that reads the view and has not got its data within this is answered 503
  // `view_timeout` (Retry-After: 1); the late result is dropped. 10..60'000 ms.
  int64_t view_timeout_ms = 500;
  // Answers waiting for or running on the view threads, per listener; beyond this a request that
  // reads the view is answered 503 `busy` at once, so a stuck view queues nothing unbounded.
  // 1..100'000.
  uint32_t max_pending_view_answers = 64;
  // Niceness of the API listener's I/O and view threads (not the probe port's), so that under
  // CPU contention ingestion runs before card lookups. 0..19; 0 leaves them as the process is.
  int32_t thread_nice = 0;
  // Card-lookup audit lines waiting for the audit log's sink, at most (api/audit_writer.h):
  // beyond this a line is dropped, counted in fraud_audit_dropped_total and warned about, so a
  // blocked log never holds a lookup. 1..1'000'000 (about 200 bytes a line). No flag sets it
  // yet: the service runs with the default.
  size_t audit_queue_lines = 10'000;

  [[nodiscard]] bool tls() const { return !tls_cert_file.empty() || !tls_key_file.empty(); }
  // Every violated bound, one message each; empty when the options are usable.
  [[nodiscard]] std::vector<std::string> validate() const;
};

// Ok when `token` can be the API token; else kInvalidArgument, whose message says why as a phrase
// ("must ...") for the caller to put after what it names, and never quotes the token.
[[nodiscard]] base::Status checkApiToken(std::string_view token);

}  // namespace fraud::api
