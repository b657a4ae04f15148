#include "api/request_reader.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace fraud::api::detail {

namespace http = boost::beast::http;

struct RequestReader::Parser {
  http::request_parser<http::string_body> parser;
};

RequestReader::RequestReader(const ApiOptions& options)
    : parser_(std::make_unique<Parser>()), cap_(requestByteCap(options)) {
  // Not eager: put() stops after the header, so the framing is checked before any body byte.
  parser_->parser.eager(false);
  parser_->parser.header_limit(static_cast<uint32_t>(options.max_header_bytes));
  parser_->parser.body_limit(options.max_body_bytes);
}

RequestReader::~RequestReader() = default;

void RequestReader::refuse(int status, std::string_view code, std::string_view message) {
  progress_ = Progress::kRefused;
  refusal_ = RequestRefusal{status, code, message};
}

size_t RequestReader::feed(std::string_view bytes) {
  auto& parser = parser_->parser;
  size_t used = 0;
  while (progress_ == Progress::kNeedMore && used < bytes.size()) {
    boost::beast::error_code ec;
    const size_t n =
        parser.put(boost::asio::const_buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    consumed_ += n;
    if (ec == http::error::need_more) {
      if (n == 0) break;  // an element is incomplete: wait for more bytes
      continue;
    }
    if (ec == http::error::header_limit) {
      refuse(431, "header_too_large", "the request line and headers are too large");
    } else if (ec == http::error::body_limit) {
      refuse(413, "body_too_large", "the request body is too large");
    } else if (ec) {
      refuse(400, "bad_request", "the request is not valid HTTP/1.1");
    } else if (parser.is_header_done() &&
               (parser.chunked() || parser.get().count(http::field::transfer_encoding))) {
      // Chunk sizes, extensions and trailers are framing Beast 1.74 does not bound; the API's
      // one body (a lookup) is small and its clients send Content-Length.
      refuse(411, "length_required", "request bodies need Content-Length, not Transfer-Encoding");
    } else if (parser.is_done()) {
      progress_ = Progress::kDone;
      version_ = parser.get().version();
      keep_alive_ = parser.get().keep_alive();
    } else if (n == 0) {
      break;
    }
  }
  seen_ = consumed_ + (bytes.size() - used);
  if (progress_ == Progress::kNeedMore && seen_ >= cap_) {
    if (parser.is_header_done()) {
      refuse(413, "body_too_large", "the request is too large");
    } else {
      refuse(431, "header_too_large", "the request line and headers are too large");
    }
  }
  return used;
}

// Beast fills the start line's parts once it has parsed the line, even when a later check of
// the header (its size, a declared body over the limit) fails.
std::string RequestReader::method() const {
  const auto method = parser_->parser.get().method_string();
  return method.empty() ? "-" : std::string(method);
}

std::string RequestReader::target() const { return std::string(parser_->parser.get().target()); }

HttpRequest RequestReader::take() {
  auto message = parser_->parser.release();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = std::move(message.body());
  return request;
}

}  // namespace fraud::api::detail
