#pragma once

// Internal to fraud::api: reads one HTTP/1.1 request out of the bytes a connection receives,
// under every cap of ApiOptions. No Boost type here (the parser, Beast's, is in the .cc), so the
// connection fuzzer (tests/fuzz/connection_fuzz.cc) drives the very code the server runs.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "api/options.h"
#include "api/router.h"

namespace fraud::api::detail {

// Why a request was refused; the server answers it with `status` and closes the connection.
struct RequestRefusal {
  int status = 400;
  std::string_view code;
  std::string_view message;
};

// Bounds (docs/api.md, "Limits"): the request line and header fields are at most
// max_header_bytes (431); a body is at most max_body_bytes (413, refused on its declared length
// before it is read); a request with Transfer-Encoding (chunked) is refused with 411 as soon as
// its header is complete, since the API takes bodies only with Content-Length; and everything
// read for one request, whatever its framing, is at most requestByteCap() (431 while in the
// header, 413 after), so no byte sequence grows a connection's memory past that.
//
// One reader per request. Not thread-safe (a connection's strand owns it).
class RequestReader {
 public:
  enum class Progress { kNeedMore, kDone, kRefused };

  explicit RequestReader(const ApiOptions& options);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // The most bytes one request may take, framing included.
  [[nodiscard]] static size_t requestByteCap(const ApiOptions& options) {
    return options.max_header_bytes + options.max_body_bytes;
  }

  // Parses what it can of `bytes` (everything received and not yet consumed) and returns how many
  // it consumed; the caller keeps the rest and passes it again with more. While kNeedMore,
  // consumed plus unconsumed bytes stay under requestByteCap(). Call only while kNeedMore.
  [[nodiscard]] size_t feed(std::string_view bytes);

  [[nodiscard]] Progress progress() const { return progress_; }
  // Some byte of this request has arrived (for telling a slow client from a silent one).
  [[nodiscard]] bool gotSome() const { return seen_ > 0; }
  // When kRefused.
  [[nodiscard]] const RequestRefusal& refusal() const { return refusal_; }
  // The start line's method and target once the start line is parsed, else "-" and "".
  [[nodiscard]] std::string method() const;
  [[nodiscard]] std::string target() const;

  // When kDone: the request (client left empty), its HTTP minor version (10 or 11) and whether
  // it asks for keep-alive. Call take() once.
  [[nodiscard]] HttpRequest take();
  [[nodiscard]] unsigned version() const { return version_; }
  [[nodiscard]] bool keepAlive() const { return keep_alive_; }

 private:
  void refuse(int status, std::string_view code, std::string_view message);

  struct Parser;
  std::unique_ptr<Parser> parser_;
  const size_t cap_;
  size_t consumed_ = 0;  // bytes the parser took
  size_t seen_ = 0;      // consumed_ plus what is waiting in the caller's buffer
  Progress progress_ = Progress::kNeedMore;
  RequestRefusal refusal_;
  unsigned version_ = 11;
  bool keep_alive_ = false;
};

}  // namespace fraud::api::detail
