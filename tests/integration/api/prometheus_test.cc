#include <fcntl.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/api/api_server_fixture.h"
#include "tests/support/http_probe.h"

extern char** environ;

namespace fraud::api {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;
using testing::HttpClient;
using testing::runCommand;
using testing::TempDir;

constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kPrometheus = "/usr/bin/prometheus";

// A child process with its output in a file; terminated (then killed) at destruction.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    if (!testing::waitFor([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; },
                          milliseconds(10'000))) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  [[nodiscard]] bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

class PrometheusTest : public ApiServerTest {
 protected:
  PrometheusTest() {
    // Families the service registers beside the API's, so the checks cover a realistic mix.
    auto& records = prometheus::BuildCounter()
                        .Name("fraud_records_total")
                        .Help("Input records by outcome")
                        .Register(registry_);
    records.Add({{"outcome", "accepted"}}).Increment(41);
    records.Add({{"outcome", "late_dropped"}}).Increment();
    prometheus::BuildGauge()
        .Name("fraud_partition_offset_lag")
        .Help("Offset lag per partition")
        .Register(registry_)
        .Add({{"partition", "0"}})
        .Set(12);
  }
};

TEST_F(PrometheusTest, PromtoolFindsNoProblemInTheMetricsAnswer) {
  ASSERT_EQ(::access(kPromtool, X_OK), 0) << kPromtool << " missing: run scripts/setup";
  startServer();
  HttpClient client(port_);
  // One answer of each kind first, so every API family has samples.
  ASSERT_EQ(client.get("/healthz")->status, 200);
  ASSERT_EQ(client.lookup(kCard)->status, 404);
  ASSERT_EQ(client.get("/v1/cards/zz")->status, 400);
  const auto metrics = client.get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  TempDir dir;
  dir.write("metrics.txt", metrics->body);
  const auto result =
      runCommand(std::string(kPromtool) + " check metrics < " + dir.path() + "/metrics.txt");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, "") << result.output;  // promtool prints lint findings
  EXPECT_NE(metrics->body.find("fraud_http_requests_total{"), std::string::npos);
  EXPECT_EQ(metrics->body.find(kCard), std::string::npos);
}

// A real Prometheus server scrapes this server and answers queries about what it scraped.
TEST_F(PrometheusTest, ARealPrometheusScrapesTheServer) {
  ASSERT_EQ(::access(kPrometheus, X_OK), 0) << kPrometheus << " missing: run scripts/setup";
  startServer();
  {
    HttpClient client(port_);
    ASSERT_EQ(client.get("/healthz")->status, 200);
  }
  TempDir dir;
  dir.write("prometheus.yml",
            "global:\n"
            "  scrape_interval: 1s\n"
            "  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            "  - job_name: fraud\n"
            "    static_configs:\n"
            "      - targets: ['127.0.0.1:" +
                std::to_string(port_) + "']\n");
  const uint16_t prometheus_port = fraud::testing::freeTcpPort();
  Child prometheus(
      {kPrometheus, "--config.file=" + dir.path() + "/prometheus.yml",
       "--storage.tsdb.path=" + dir.path() + "/data",
       "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port), "--log.level=warn"},
      dir.path() + "/prometheus.log");
  ASSERT_TRUE(prometheus.started());

  // The query API's answer for `query`, once its result is non-empty.
  const auto query = [&](const std::string& promql) -> Json {
    HttpClient client(prometheus_port);
    const auto reply = client.send("POST", "/api/v1/query", "query=" + promql,
                                   {{"Content-Type", "application/x-www-form-urlencoded"}});
    if (!reply || reply->status != 200) return nullptr;
    const Json body = Json::parse(reply->body, nullptr, false);
    if (body.is_discarded() || body["data"]["result"].empty()) return nullptr;
    return body["data"]["result"];
  };
  Json up;
  EXPECT_TRUE(testing::waitFor([&] { return !(up = query("up%7Bjob=%22fraud%22%7D")).is_null(); },
                               milliseconds(60'000), milliseconds(250)))
      << runCommand("cat " + dir.path() + "/prometheus.log").output;
  ASSERT_FALSE(up.is_null());
  EXPECT_EQ(up[0]["value"][1], "1") << up.dump();

  // Series we expose, with their labels as we wrote them (%22 is a quote, %7B%7D braces).
  Json health;
  EXPECT_TRUE(testing::waitFor(
      [&] {
        return !(health = query("fraud_http_requests_total%7Broute=%22/healthz%22%7D")).is_null();
      },
      milliseconds(30'000), milliseconds(250)));
  ASSERT_FALSE(health.is_null());
  EXPECT_EQ(health[0]["metric"]["status"], "200");
  EXPECT_EQ(health[0]["metric"]["instance"], "127.0.0.1:" + std::to_string(port_));
  const Json accepted = query("fraud_records_total%7Boutcome=%22accepted%22%7D");
  ASSERT_FALSE(accepted.is_null());
  EXPECT_EQ(accepted[0]["value"][1], "41");
}

}  // namespace
}  // namespace fraud::api
