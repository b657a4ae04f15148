#include "api/http_server.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/integration/api/api_server_fixture.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;
using testing::HttpClient;
using testing::RawConnection;
using testing::runCommand;
using testing::waitFor;

detectors::CardState stateWithEvents(int count) {
  detectors::CardState state;
  for (int i = 0; i < count; ++i) {
    const std::string id = "tx-" + std::to_string(i);
    state.events.push_back({1000 + i, detectors::Country::of('F', 'R'), id.c_str()});
  }
  return state;
}

TEST_F(ApiServerTest, ServesEveryEndpointOverRealHttp) {
  startServer();
  HttpClient client(port_);
  EXPECT_EQ(client.get("/healthz")->status, 200);
  EXPECT_EQ(client.get("/readyz")->status, 200);
  const auto metrics = client.get("/metrics");
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(Json::parse(client.get("/openapi.json")->body)["info"]["title"], "fraud-detector API");
  EXPECT_EQ(Json::parse(client.get("/v1/partitions")->body)["partitions"].size(), 4u);
  EXPECT_EQ(client.lookup(kCard)->status, 404);
  const std::string ref = view_.putCard(kCard, stateWithEvents(2)).hex();
  const auto found = client.lookup(kCard);
  ASSERT_EQ(found->status, 200);
  EXPECT_EQ(found->header("content-type"), "application/json");
  EXPECT_EQ(found->header("cache-control"), "no-store");
  EXPECT_EQ(Json::parse(found->body)["card_ref"], ref);
  EXPECT_EQ(client.get("/v1/cards/" + ref)->status, 200);
  EXPECT_EQ(client.get("/v1/cards/XYZ")->status, 400);
  EXPECT_EQ(client.send("DELETE", "/healthz")->status, 405);
  EXPECT_EQ(client.get("/nowhere")->status, 404);
  view_.setJoined(false);
  EXPECT_EQ(client.get("/readyz")->status, 503);
}

TEST_F(ApiServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  startServer();
  HttpClient client(port_);
  for (int i = 0; i < 50; ++i) {
    const auto reply = client.get("/healthz");
    ASSERT_TRUE(reply) << client.error();
    EXPECT_TRUE(reply->keep_alive);
  }
  // This connection is the only one open.
  EXPECT_NE(client.get("/metrics")->body.find("fraud_http_open_connections 1\n"),
            std::string::npos);
}

TEST_F(ApiServerTest, PipelinedRequestsAreAnsweredInOrder) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(
      raw.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n"
               "Connection: close\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  const size_t first = text.find("HTTP/1.1 200");
  const size_t second = text.find("HTTP/1.1 404");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second);
}

TEST_F(ApiServerTest, Http10ClientGetsAnAnswerAndAClose) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.0\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.0 200")) << text;
}

TEST_F(ApiServerTest, TokenGuardsV1OnlyWhenConfigured) {
  options_.api_token = "integration-token";
  startServer();
  HttpClient client(port_);
  const auto denied = client.get("/v1/partitions");
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->header("www-authenticate"), "Bearer realm=\"fraud-detector\"");
  EXPECT_EQ(client.get("/v1/partitions", "wrong")->status, 401);
  EXPECT_EQ(client.get("/v1/partitions", "integration-token")->status, 200);
  EXPECT_EQ(client.lookup(kCard)->status, 401);
  EXPECT_EQ(client.lookup(kCard, "integration-token")->status, 404);
  EXPECT_EQ(client.get("/healthz")->status, 200);
  EXPECT_EQ(client.get("/readyz")->status, 200);
  EXPECT_EQ(client.get("/metrics")->status, 200);
}

TEST_F(ApiServerTest, MalformedRequestGets400JsonAndClose) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GARBAGE\x01 / HTTP/9.9\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 400")) << text;
  EXPECT_NE(text.find(R"("error":"bad_request")"), std::string::npos);
  EXPECT_NE(metricsText().find(R"(fraud_http_requests_total{route="unmatched",status="400"} 1)"),
            std::string::npos);
}

TEST_F(ApiServerTest, OversizedHeadersGet431) {
  options_.max_header_bytes = 2048;
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') +
                       "\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 431")) << text;
  EXPECT_NE(text.find(R"("error":"header_too_large")"), std::string::npos);
}

TEST_F(ApiServerTest, OversizedBodyGets413BeforeItIsRead) {
  options_.max_body_bytes = 1024;
  startServer();
  RawConnection raw(port_);
  // Only the header is sent: the declared length alone must be refused.
  ASSERT_TRUE(
      raw.send("POST /v1/cards/lookup HTTP/1.1\r\nHost: x\r\nContent-Type: "
               "application/json\r\nContent-Length: 100000\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 413")) << text;
  EXPECT_NE(
      metricsText().find(R"(fraud_http_requests_total{route="/v1/cards/lookup",status="413"} 1)"),
      std::string::npos);
}

TEST_F(ApiServerTest, ChunkedBodyGets411AndClose) {
  startServer();
  RawConnection raw(port_);
  // The header alone draws the answer: no chunk is ever read.
  ASSERT_TRUE(
      raw.send("POST /v1/cards/lookup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 411")) << text;
  EXPECT_NE(text.find(R"("error":"length_required")"), std::string::npos) << text;
  EXPECT_NE(
      metricsText().find(R"(fraud_http_requests_total{route="/v1/cards/lookup",status="411"} 1)"),
      std::string::npos);
}

TEST_F(ApiServerTest, HalfARequestThenEndOfStreamGets400) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.1\r\nHost"));
  raw.shutdownSend();
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 400")) << text;
}

TEST_F(ApiServerTest, SlowClientGets408AndIsClosedWithinTheReadTimeout) {
  options_.read_timeout_ms = 300;
  startServer();
  RawConnection raw(port_);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // never finished
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(10'000), closed);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 408")) << text;
  EXPECT_NE(text.find("Connection: close"), std::string::npos) << text;
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(300 + 2000));  // the timeout plus the closing linger, at most
}

TEST_F(ApiServerTest, SilentConnectionIsClosedWithoutAnAnswer) {
  options_.read_timeout_ms = 200;
  startServer();
  RawConnection raw(port_);
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(10'000), closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(text, "");
}

TEST_F(ApiServerTest, SlowClientDoesNotHoldUpOthers) {
  options_.read_timeout_ms = 60'000;
  options_.threads = 1;
  startServer();
  RawConnection slow(port_);
  ASSERT_TRUE(slow.send("POST /v1/cards/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n"));
  HttpClient client(port_);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client.get("/healthz")->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
}

TEST_F(ApiServerTest, SlowViewReadsDoNotHoldUpProbesOrScrapes) {
  options_.threads = 1;
  options_.view_threads = 1;
  startServer();
  view_.holdLookups();
  std::optional<testing::Reply> held_reply;
  std::thread held([&] {
    HttpClient client(port_);
    held_reply = client.lookup(kCard);
  });
  ASSERT_TRUE(waitFor([&] { return view_.waitingLookups() == 1; }, milliseconds(5000)));
  HttpClient client(port_);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client.get("/healthz")->status, 200);
  EXPECT_EQ(client.get("/metrics")->status, 200);
  EXPECT_EQ(client.get("/openapi.json")->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_EQ(view_.waitingLookups(), 1);  // still held: the answers above did not wait for it
  view_.releaseLookups();
  held.join();
  ASSERT_TRUE(held_reply.has_value());
  EXPECT_EQ(held_reply->status, 404);
}

TEST_F(ApiServerTest, StopWaitsForAnAnswerInFlight) {
  startServer();
  view_.holdLookups();
  std::optional<testing::Reply> held_reply;
  std::thread held([&] {
    HttpClient client(port_);
    held_reply = client.lookup(kCard);
  });
  ASSERT_TRUE(waitFor([&] { return view_.waitingLookups() == 1; }, milliseconds(5000)));
  std::thread release([&] {
    // Released after stop() has begun: stop() must let the answer go out.
    EXPECT_TRUE(
        waitFor([&] { return RawConnection(port_).connected() == false; }, milliseconds(5000)));
    view_.releaseLookups();
  });
  server_->stop(std::chrono::seconds(5));
  release.join();
  held.join();
  ASSERT_TRUE(held_reply.has_value());
  EXPECT_EQ(held_reply->status, 404);
  EXPECT_FALSE(held_reply->keep_alive);
}

TEST_F(ApiServerTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  options_.idle_timeout_ms = 200;
  startServer();
  HttpClient client(port_);
  ASSERT_EQ(client.get("/healthz")->status, 200);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.closedByServer(milliseconds(10'000)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(150));
}

TEST_F(ApiServerTest, ConnectionsOverTheCapGet503UntilOneCloses) {
  options_.max_connections = 3;
  startServer();
  std::vector<std::unique_ptr<HttpClient>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<HttpClient>(port_));
    ASSERT_EQ(held.back()->get("/healthz")->status, 200);
  }
  {
    RawConnection over(port_);
    ASSERT_TRUE(over.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    bool closed = false;
    const std::string text = over.readUntilClosed(milliseconds(5000), closed);
    EXPECT_TRUE(closed);
    EXPECT_TRUE(text.starts_with("HTTP/1.1 503")) << text;
    EXPECT_NE(text.find("Retry-After: 1"), std::string::npos);
    EXPECT_NE(text.find("too_many_connections"), std::string::npos);
  }
  held.pop_back();  // closes one connection
  EXPECT_TRUE(waitFor(
      [&] {
        HttpClient client(port_);
        const auto reply = client.get("/healthz");
        return reply && reply->status == 200;
      },
      milliseconds(5000)));
  const std::string metrics = held.front()->get("/metrics")->body;
  EXPECT_NE(metrics.find("fraud_http_rejected_connections_total"), std::string::npos);
  EXPECT_EQ(metrics.find("fraud_http_rejected_connections_total 0\n"), std::string::npos);
}

TEST_F(ApiServerTest, ManyConcurrentConnectionsWhileTheViewChanges) {
  constexpr int kClients = 200;
  constexpr int kRequestsEach = 20;
  constexpr int kCards = 64;
  options_.threads = 2;
  view_.setPartitionCount(8);
  view_.assignAllActive();
  startServer();
  auto card = [](int i) { return "card-" + std::to_string(i); };

  std::atomic<bool> stop{false};
  std::thread ingest([&] {
    for (int round = 0; !stop.load(); ++round) {
      const int i = round % kCards;
      const int partition = *view_.partitionOf(card(i));
      view_.putCard(card(i), stateWithEvents(1 + round % 5));
      if (round % 7 == 0) view_.setPartition(fraud::testing::FakeServiceView::restoring(partition));
      if (round % 11 == 0) view_.revokePartition(partition);
      if (round % 3 == 0) view_.setPartition(fraud::testing::FakeServiceView::active(partition));
      if (round % 13 == 0) view_.eraseCard(partition, view_.cardRef(card(i)));
    }
  });

  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::mutex first_failure_mutex;
  std::string first_failure;
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) == 0) {
      std::lock_guard lock(first_failure_mutex);
      first_failure = what;
    }
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      HttpClient client(port_);
      if (!client.get("/healthz")) fail("connect: " + client.error());
      ready.fetch_add(1);
      while (ready.load() < kClients) std::this_thread::yield();  // all connected at once
      for (int r = 0; r < kRequestsEach; ++r) {
        const int i = (c * kRequestsEach + r) % kCards;
        const auto reply = r % 4 == 3 ? client.get("/readyz") : client.lookup(card(i));
        if (!reply) {
          fail("request: " + client.error());
          return;
        }
        const int s = reply->status;
        const bool lookup = r % 4 != 3;
        const bool allowed =
            lookup ? (s == 200 || s == 404 || s == 503 || s == 421) : (s == 200 || s == 503);
        if (!allowed) fail("status " + std::to_string(s) + ": " + reply->body);
        const Json body = Json::parse(reply->body, nullptr, false);
        if (body.is_discarded()) fail("not JSON: " + reply->body);
        if (lookup && s == 200 && body["card_ref"] != view_.cardRef(card(i)).hex()) {
          fail("wrong card: " + reply->body);
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  stop = true;
  ingest.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;

  // Every request was counted once: the sum over fraud_http_requests_total.
  std::istringstream lines(metricsText());
  double total = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("fraud_http_requests_total{"))
      total += std::stod(line.substr(line.rfind(' ')));
  }
  EXPECT_EQ(total, kClients * (kRequestsEach + 1));
}

// Two instances: curl follows the 307 from the one that does not hold the card's partition to
// the one that does, re-posting the body, and gets the card.
TEST_F(ApiServerTest, CurlFollowsTheRedirectToTheOwningInstance) {
  fraud::testing::FakeServiceView owner_view;
  owner_view.setJoined(true);
  owner_view.setInstanceId("127.0.0.1");
  owner_view.assignAllActive();
  const std::string ref = owner_view.putCard(kCard, stateWithEvents(2)).hex();
  prometheus::Registry owner_registry;
  Router owner_router(options_, owner_view, owner_registry);
  HttpServer owner(options_, owner_router);
  ASSERT_FALSE(owner.start().has_value());

  const int32_t partition = *view_.partitionOf(kCard);
  view_.revokePartition(partition);
  view_.setOwner(partition, "127.0.0.1");
  options_.peer_url_template = "http://{member}:" + std::to_string(owner.port());
  startServer();
  const auto result = runCommand(
      "curl -sS -L -w '\n%{http_code} %{num_redirects}' -H 'Content-Type: application/json' "
      "--data '{\"card\":\"" +
      std::string(kCard) + "\"}' http://127.0.0.1:" + std::to_string(port_) + "/v1/cards/lookup");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(result.output.ends_with("\n200 1")) << result.output;
  EXPECT_EQ(Json::parse(result.output.substr(0, result.output.rfind('\n')))["card_ref"], ref);
}

TEST_F(ApiServerTest, StopClosesIdleConnectionsAndReturnsPromptly) {
  options_.idle_timeout_ms = 600'000;
  startServer();
  HttpClient idle(port_);
  ASSERT_EQ(idle.get("/healthz")->status, 200);
  RawConnection silent(port_);
  const auto start = std::chrono::steady_clock::now();
  server_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  EXPECT_TRUE(idle.closedByServer(milliseconds(2000)));
  bool closed = false;
  (void)silent.readUntilClosed(milliseconds(2000), closed);
  EXPECT_TRUE(closed);
  EXPECT_FALSE(RawConnection(port_).connected());
  server_->stop();  // idempotent
}

TEST_F(ApiServerTest, StartReportsAPortInUse) {
  startServer();
  ApiOptions same = options_;
  same.port = port_;
  HttpServer second(same, *router_);
  const auto problem = second.start();
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("cannot bind"), std::string::npos) << *problem;
  ApiOptions same_probe = options_;
  same_probe.probe_port = server_->probePort();
  HttpServer third(same_probe, *router_);
  const auto probe_problem = third.start();
  ASSERT_TRUE(probe_problem.has_value());
  EXPECT_NE(probe_problem->find("probe port: cannot bind"), std::string::npos) << *probe_problem;
}

TEST_F(ApiServerTest, ProbeListenerServesOnlyTheProbes) {
  options_.api_token = "tok";
  startServer();
  ASSERT_NE(server_->probePort(), 0);
  ASSERT_NE(server_->probePort(), port_);
  HttpClient probe(server_->probePort());
  EXPECT_EQ(probe.get("/healthz")->status, 200);
  EXPECT_EQ(probe.get("/readyz")->status, 200);
  const auto metrics = probe.get("/metrics");
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("fraud_http_requests_total"), std::string::npos);
  for (const char* other : {"/v1/partitions", "/openapi.json", "/v1/cards/lookup", "/x"}) {
    const auto reply = probe.get(other, "tok");
    ASSERT_TRUE(reply) << probe.error();
    EXPECT_EQ(reply->status, 404) << other;
  }
  EXPECT_EQ(probe.send("POST", "/healthz")->status, 405);
  // The API port still serves the probes too, for deployments that point at it.
  HttpClient api(port_);
  EXPECT_EQ(api.get("/healthz")->status, 200);
  EXPECT_EQ(api.get("/v1/partitions", "tok")->status, 200);
}

TEST_F(ApiServerTest, ProbePortMinusOneMeansNoProbeListener) {
  options_.probe_port = -1;
  startServer();
  EXPECT_EQ(server_->probePort(), 0);
  HttpClient api(port_);
  EXPECT_EQ(api.get("/healthz")->status, 200);
}

TEST_F(ApiServerTest, ProbesAnswerWhileTheApiPortIsFull) {
  options_.max_connections = 2;
  options_.max_connections_per_client = 2;
  startServer();
  std::vector<std::unique_ptr<HttpClient>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<HttpClient>(port_));
    ASSERT_EQ(held.back()->get("/healthz")->status, 200);
  }
  HttpClient over(port_);
  EXPECT_EQ(over.get("/healthz")->status, 503);
  HttpClient probe(server_->probePort());
  EXPECT_EQ(probe.get("/healthz")->status, 200);
  EXPECT_EQ(probe.get("/readyz")->status, 200);
  // The probe connection is not one of the API's.
  EXPECT_NE(probe.get("/metrics")->body.find("fraud_http_open_connections 2\n"), std::string::npos);
}

TEST_F(ApiServerTest, OneAddressIsHeldToItsPerClientCap) {
  options_.max_connections = 10;
  options_.max_connections_per_client = 2;
  startServer();
  std::vector<std::unique_ptr<HttpClient>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<HttpClient>(port_));
    ASSERT_EQ(held.back()->get("/healthz")->status, 200);
  }
  RawConnection third(port_);
  ASSERT_TRUE(third.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const std::string text = third.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 503")) << text;
  const std::string metrics = registryText();
  EXPECT_NE(metrics.find("fraud_http_rejected_client_connections_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("fraud_http_rejected_connections_total 1\n"), std::string::npos);
  held.pop_back();
  EXPECT_TRUE(waitFor(
      [&] {
        HttpClient client(port_);
        const auto reply = client.get("/healthz");
        return reply && reply->status == 200;
      },
      milliseconds(5000)));
}

// A view whose status() blocks while gated, as a view stuck behind a lock would.
class GatedStatusView final : public ServiceView {
 public:
  explicit GatedStatusView(const ServiceView& inner) : inner_(inner) {}
  void close() {
    std::lock_guard lock(mutex_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  ServiceStatus status() const override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
    return inner_.status();
  }
  std::optional<int32_t> partitionOf(std::string_view card) const override {
    return inner_.partitionOf(card);
  }
  detectors::CardRef cardRef(std::string_view card) const override { return inner_.cardRef(card); }
  CardLookup lookup(int32_t partition, const detectors::CardRef& ref) const override {
    return inner_.lookup(partition, ref);
  }
  CardLookup lookupHeld(const detectors::CardRef& ref) const override {
    return inner_.lookupHeld(ref);
  }
  std::optional<std::string> ownerOf(int32_t partition) const override {
    return inner_.ownerOf(partition);
  }

 private:
  const ServiceView& inner_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool open_ = true;
};

TEST_F(ApiServerTest, AViewThatHangsGets503AtTheDeadlineNotAHungProbe) {
  options_.view_timeout_ms = 200;
  GatedStatusView gated(view_);
  router_ = std::make_unique<Router>(options_, gated, registry_);
  server_ = std::make_unique<HttpServer>(options_, *router_);
  ASSERT_FALSE(server_->start().has_value());
  gated.close();
  for (const uint16_t port : {server_->port(), server_->probePort()}) {
    HttpClient client(port);
    const auto start = std::chrono::steady_clock::now();
    const auto reply = client.get("/readyz");
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(reply) << client.error();
    EXPECT_EQ(reply->status, 503);
    EXPECT_NE(reply->body.find(R"("error":"view_timeout")"), std::string::npos) << reply->body;
    EXPECT_EQ(reply->header("retry-after"), "1");
    EXPECT_GE(took, milliseconds(150));
    EXPECT_LT(took, milliseconds(2000));  // the deadline, not the hang
    // The connection stays usable and answers what needs no view.
    EXPECT_EQ(client.get("/healthz")->status, 200);
  }
  EXPECT_NE(registryText().find(R"(fraud_http_view_unanswered_total{reason="timeout"} 2)"),
            std::string::npos);
  gated.open();  // the late answers are dropped, and not counted; the view recovers
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_NE(registryText().find(R"(fraud_http_requests_total{route="/readyz",status="503"} 2)"),
            std::string::npos)
      << registryText();
  EXPECT_EQ(registryText().find(R"(fraud_http_requests_total{route="/readyz",status="200"})"),
            std::string::npos)
      << "a dropped late answer was counted too";
  EXPECT_TRUE(waitFor(
      [&] {
        HttpClient client(server_->probePort());
        const auto reply = client.get("/readyz");
        return reply && reply->status == 200;
      },
      milliseconds(5000)));
  server_.reset();
}

TEST_F(ApiServerTest, AFullViewQueueGets503BusyAtOnce) {
  options_.view_threads = 1;
  options_.max_pending_view_answers = 1;
  options_.view_timeout_ms = 30'000;
  startServer();
  view_.holdLookups();
  std::optional<testing::Reply> held_reply;
  std::thread held([&] {
    HttpClient client(port_);
    held_reply = client.lookup(kCard);
  });
  ASSERT_TRUE(waitFor([&] { return view_.waitingLookups() == 1; }, milliseconds(5000)));
  HttpClient client(port_);
  const auto busy = client.get("/v1/partitions");
  ASSERT_TRUE(busy) << client.error();
  EXPECT_EQ(busy->status, 503);
  EXPECT_NE(busy->body.find(R"("error":"busy")"), std::string::npos) << busy->body;
  // The probe listener has its own view thread and queue.
  HttpClient probe(server_->probePort());
  EXPECT_EQ(probe.get("/readyz")->status, 200);
  view_.releaseLookups();
  held.join();
  ASSERT_TRUE(held_reply.has_value());
  EXPECT_EQ(held_reply->status, 404);
  EXPECT_EQ(client.get("/v1/partitions")->status, 200);
}

TEST_F(ApiServerTest, ARotatedTokenFileIsPickedUpAndABadOneKeepsTheOld) {
  testing::TempDir dir;
  dir.write("token", "first-token\n");
  options_.api_token = "first-token";
  options_.api_token_file = dir.path() + "/token";
  options_.reload_interval_ms = 100;
  startServer();
  HttpClient client(port_);
  EXPECT_EQ(client.get("/v1/partitions", "first-token")->status, 200);
  dir.write("token.new", "second-token\n");
  ASSERT_EQ(std::rename((dir.path() + "/token.new").c_str(), options_.api_token_file.c_str()), 0);
  EXPECT_TRUE(waitFor([&] { return client.get("/v1/partitions", "second-token")->status == 200; },
                      milliseconds(5000)));
  EXPECT_EQ(client.get("/v1/partitions", "first-token")->status, 401);
  dir.write("token", "not a token\n");
  EXPECT_TRUE(waitFor(
      [&] {
        return registryText().find(R"(fraud_http_reloads_total{file="token",outcome="error"} 1)") !=
               std::string::npos;
      },
      milliseconds(5000)));
  EXPECT_EQ(client.get("/v1/partitions", "second-token")->status, 200);
  EXPECT_NE(registryText().find(R"(fraud_http_reloads_total{file="token",outcome="ok"} 1)"),
            std::string::npos);
}

// curl as a second, independent client; the access and audit logs captured to check that the
// clear card goes to neither.
TEST_F(ApiServerTest, CurlLookupLeavesNoCardInAccessOrAuditLog) {
  std::ostringstream logs;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(logs);
  for (const char* name : {"audit", "http"}) {
    spdlog::drop(name);
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_level(spdlog::level::trace);
    spdlog::register_logger(logger);
  }
  view_.putCard(kCard, stateWithEvents(3));
  startServer();
  const auto result = runCommand(
      "curl -sS -w '\\n%{http_code}' -H 'Content-Type: application/json' "
      "--data '{\"card\":\"" +
      std::string(kCard) + "\"}' http://127.0.0.1:" + std::to_string(port_) + "/v1/cards/lookup");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(result.output.ends_with("\n200")) << result.output;
  EXPECT_EQ(Json::parse(result.output.substr(0, result.output.rfind('\n')))["events"].size(), 3u);
  EXPECT_EQ(result.output.find(kCard), std::string::npos);
  server_->stop();
  const std::string text = logs.str();
  EXPECT_NE(text.find("outcome=found status=200"), std::string::npos) << text;
  EXPECT_NE(text.find("POST /v1/cards/lookup 200"), std::string::npos) << text;  // access line
  EXPECT_EQ(text.find(kCard), std::string::npos) << text;
  spdlog::drop("audit");
  spdlog::drop("http");
}

}  // namespace
}  // namespace fraud::api
