// fraud-api-test-server: the API over fake service views, for peers that need a live server
// (schemathesis.sh). Two servers: "main" holds partitions 0-1 active and 2 restoring; partition 3
// is owned by "peer" (main redirects to it); the owner of partition 4 is unknown (421). A card
// with state sits in each partition that holds it. Prints `port=N` and `peer_port=N`, then
// serves until SIGTERM, SIGINT or end of stdin.
#include <prometheus/registry.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "api/http_server.h"
#include "api/router.h"
#include "tests/support/fake_service_view.h"

namespace {

using fraud::testing::FakeServiceView;

constexpr int32_t kPartitions = 5;

void addCards(FakeServiceView& view) {
  fraud::detectors::CardState state;
  state.events.push_back({1'700'000'000'000, fraud::detectors::Country::of('F', 'R'), "tx-1"});
  state.events.push_back({1'700'000'060'000, fraud::detectors::Country::of('D', 'E'), "tx-2"});
  state.events.push_back({1'700'000'120'000, fraud::detectors::Country::of('U', 'S'), "tx-3"});
  state.incident = fraud::detectors::Incident{1'700'000'000'000, 1'700'000'600'000, 1, {}};
  for (const char* country : {"DE", "FR", "US"}) {
    state.incident->countries.push_back(fraud::detectors::Country::of(country[0], country[1]));
  }
  for (int i = 0; i < 100; ++i) view.putCard("4111" + std::to_string(1'000'000'000'000 + i), state);
  view.putCard("4111111111111111", state);
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> token;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--token") == 0) token = argv[i + 1];
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

  fraud::api::ApiOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.probe_port = -1;  // schemathesis tests the API port
  options.api_token = token;

  FakeServiceView peer_view("schemathesis-key", kPartitions);
  peer_view.setJoined(true);
  peer_view.setInstanceId("127.0.0.1");
  peer_view.setPartition(FakeServiceView::active(3));
  addCards(peer_view);
  prometheus::Registry peer_registry;
  fraud::api::Router peer_router(options, peer_view, peer_registry);
  fraud::api::HttpServer peer(options, peer_router);
  if (auto problem = peer.start(); !problem.ok()) {
    std::cerr << "peer server: " << problem.message() << "\n";
    return 1;
  }

  FakeServiceView view("schemathesis-key", kPartitions);
  view.setJoined(true);
  view.setInstanceId("fraud-detector-0");
  view.setPartition(FakeServiceView::active(0));
  view.setPartition(FakeServiceView::active(1, 20'000));  // lagging: /readyz answers 503
  view.setPartition(FakeServiceView::restoring(2));
  view.setOwner(3, "127.0.0.1");
  addCards(view);
  options.peer_url_template = "http://{member}:" + std::to_string(peer.port());
  prometheus::Registry registry;
  fraud::api::Router router(options, view, registry);
  fraud::api::HttpServer server(options, router);
  if (auto problem = server.start(); !problem.ok()) {
    std::cerr << "server: " << problem.message() << "\n";
    return 1;
  }
  std::cout << "port=" << server.port() << "\npeer_port=" << peer.port() << std::endl;

  std::thread stdin_watch([] {
    char c;
    while (::read(STDIN_FILENO, &c, 1) > 0) {
    }
    ::kill(::getpid(), SIGTERM);
  });
  stdin_watch.detach();
  int received = 0;
  sigwait(&signals, &received);
  server.stop();
  peer.stop();
  return 0;
}
