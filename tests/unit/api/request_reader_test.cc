#include "api/request_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace fraud::api::detail {
namespace {

using Progress = RequestReader::Progress;

ApiOptions smallLimits() {
  ApiOptions options;
  options.max_header_bytes = 1024;
  options.max_body_bytes = 2048;
  return options;
}

// Feeds `bytes` as a connection would: `step` bytes arrive at a time, and what the reader left
// unconsumed is passed again with the next ones. Returns what is left over.
std::string feedInSteps(RequestReader& reader, const std::string& bytes, size_t step) {
  std::string buffer;
  size_t next = 0;
  while (reader.progress() == Progress::kNeedMore && next < bytes.size()) {
    buffer += bytes.substr(next, step);
    next += step;
    buffer.erase(0, reader.feed(buffer));
  }
  return buffer + (next < bytes.size() ? bytes.substr(next) : "");
}

TEST(RequestReader, ReadsAGetWhateverHowTheBytesArrive) {
  const std::string request = "GET /healthz?x=1 HTTP/1.1\r\nHost: a\r\nX-Y: z\r\n\r\n";
  for (const size_t step : {size_t{1}, size_t{7}, request.size()}) {
    RequestReader reader(smallLimits());
    EXPECT_EQ(feedInSteps(reader, request, step), "");
    ASSERT_EQ(reader.progress(), Progress::kDone) << step;
    EXPECT_TRUE(reader.keepAlive());
    EXPECT_EQ(reader.version(), 11u);
    const HttpRequest got = reader.take();
    EXPECT_EQ(got.method, "GET");
    EXPECT_EQ(got.target, "/healthz?x=1");
    ASSERT_EQ(got.headers.size(), 2u);
    EXPECT_EQ(got.headers[1].first, "X-Y");
    EXPECT_EQ(got.headers[1].second, "z");
  }
}

TEST(RequestReader, ReadsAContentLengthBodyAndLeavesAPipelinedRequest) {
  const std::string second = "GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n";
  RequestReader reader(smallLimits());
  const std::string bytes =
      "POST /v1/cards/lookup HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" + second;
  EXPECT_EQ(feedInSteps(reader, bytes, 3).substr(0, second.size()).size(), second.size());
  ASSERT_EQ(reader.progress(), Progress::kDone);
  EXPECT_EQ(reader.take().body, "hello");
}

TEST(RequestReader, ChunkedBodyIsRefusedWith411AsSoonAsTheHeaderIsComplete) {
  RequestReader reader(smallLimits());
  const std::string header =
      "POST /v1/cards/lookup HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  // Only the header and the start of a chunk extension: the refusal needs nothing more.
  (void)reader.feed(header + "1;");
  ASSERT_EQ(reader.progress(), Progress::kRefused);
  EXPECT_EQ(reader.refusal().status, 411);
  EXPECT_EQ(reader.refusal().code, "length_required");
  EXPECT_EQ(reader.method(), "POST");
  EXPECT_EQ(reader.target(), "/v1/cards/lookup");
}

TEST(RequestReader, AnyTransferEncodingIsRefusedEvenOnAGet) {
  RequestReader reader(smallLimits());
  (void)reader.feed("GET /healthz HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
  ASSERT_EQ(reader.progress(), Progress::kRefused);
  EXPECT_EQ(reader.refusal().status, 411);
}

TEST(RequestReader, HeaderFloodIs431BeforeTheLimitIsPassedByMuch) {
  RequestReader reader(smallLimits());
  std::string flood = "GET / HTTP/1.1\r\n";
  while (flood.size() < 64 * 1024) flood += "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
  const std::string left = feedInSteps(reader, flood, 100);
  ASSERT_EQ(reader.progress(), Progress::kRefused);
  EXPECT_EQ(reader.refusal().status, 431);
  // It stopped reading within a step of the header limit.
  EXPECT_GE(left.size(), flood.size() - 1024 - 100);
}

TEST(RequestReader, OneEndlessHeaderLineIs431) {
  RequestReader reader(smallLimits());
  const std::string left =
      feedInSteps(reader, "GET / HTTP/1.1\r\nX: " + std::string(100'000, 'a'), 512);
  ASSERT_EQ(reader.progress(), Progress::kRefused);
  EXPECT_EQ(reader.refusal().status, 431);
  EXPECT_GT(left.size(), 100'000u - 2048);
}

TEST(RequestReader, DeclaredBodyOverTheLimitIs413BeforeAnyBodyByte) {
  RequestReader reader(smallLimits());
  (void)reader.feed("POST /v1/cards/lookup HTTP/1.1\r\nHost: a\r\nContent-Length: 2049\r\n\r\n");
  ASSERT_EQ(reader.progress(), Progress::kRefused);
  EXPECT_EQ(reader.refusal().status, 413);
}

TEST(RequestReader, BodyAtTheLimitIsRead) {
  RequestReader reader(smallLimits());
  const std::string body(2048, 'b');
  EXPECT_EQ(feedInSteps(reader,
                        "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2048\r\n\r\n" + body, 500),
            "");
  ASSERT_EQ(reader.progress(), Progress::kDone);
  EXPECT_EQ(reader.take().body, body);
}

TEST(RequestReader, GarbageIs400AndNothingIsNotSome) {
  RequestReader silent(smallLimits());
  EXPECT_FALSE(silent.gotSome());
  EXPECT_EQ(silent.method(), "-");
  EXPECT_EQ(silent.target(), "");
  RequestReader reader(smallLimits());
  (void)reader.feed("GARBAGE\x01 / HTTP/9.9\r\n\r\n");
  EXPECT_TRUE(reader.gotSome());
  ASSERT_EQ(reader.progress(), Progress::kRefused);
  EXPECT_EQ(reader.refusal().status, 400);
}

TEST(RequestReader, Http10WithoutKeepAliveAsksToClose) {
  RequestReader reader(smallLimits());
  (void)reader.feed("GET /healthz HTTP/1.0\r\n\r\n");
  ASSERT_EQ(reader.progress(), Progress::kDone);
  EXPECT_EQ(reader.version(), 10u);
  EXPECT_FALSE(reader.keepAlive());
}

TEST(RequestReader, ByteCapIsHeaderPlusBodyLimit) {
  EXPECT_EQ(RequestReader::requestByteCap(smallLimits()), 1024u + 2048u);
}

}  // namespace
}  // namespace fraud::api::detail
