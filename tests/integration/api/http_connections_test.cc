// HttpServer's connections: slow clients and views, caps, stop, the probe listener.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/http_server.h"
#include "tests/integration/api/api_server_fixture.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;

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
  clients.reserve(kClients);
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
  ASSERT_FALSE(problem.ok());
  EXPECT_NE(problem.message().find("cannot bind"), std::string::npos) << problem.message();
  ApiOptions same_probe = options_;
  same_probe.probe_port = server_->probePort();
  HttpServer third(same_probe, *router_);
  const auto probe_problem = third.start();
  ASSERT_FALSE(probe_problem.ok());
  EXPECT_NE(probe_problem.message().find("probe port: cannot bind"), std::string::npos)
      << probe_problem.message();
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

}  // namespace
}  // namespace fraud::api
