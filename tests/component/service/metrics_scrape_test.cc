// What a scrape of /metrics over real HTTP shows: the process_* families and
// fraud_detector_build_info, read with curl and linted with promtool when it is installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <prometheus/text_serializer.h>
#include <rocksdb/version.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "api/http_server.h"
#include "api/options.h"
#include "api/router.h"
#include "service/kafka/wall_clock.h"
#include "service/metrics.h"
#include "service/process_metrics.h"
#include "service/version.h"
#include "tests/support/fake_service_view.h"
#include "tests/support/http_probe.h"

namespace fraud::service {
namespace {

using ::testing::HasSubstr;

// A line of the exposition text: "NAME{labels} VALUE" or "NAME VALUE".
std::optional<double> sampleValue(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      return std::stod(text.substr(at + series.size() + 1));
    }
    at += series.size();
  }
  return std::nullopt;
}

TEST(ProcessMetrics, ScrapeOverHttpHasProcessFamiliesAndBuildInfo) {
  ServiceRegistry registry;
  ServiceMetrics metrics(registry);
  testing::FakeServiceView view;
  api::ApiOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.probe_port = 0;  // every listener a test starts takes any free port
  api::Router router(options, view, registry);
  api::HttpServer server(options, router);
  ASSERT_TRUE(server.start().ok());

  const auto answer =
      testing::httpGet("http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  ASSERT_EQ(answer.status, 200) << answer.body;
  const std::string& text = answer.body;
  for (const char* counter : {"process_cpu_seconds_total"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + counter + " counter"));
  }
  for (const char* gauge :
       {"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
        "process_max_fds", "process_start_time_seconds", "fraud_detector_build_info"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + gauge + " gauge"));
  }
  EXPECT_GT(sampleValue(text, "process_resident_memory_bytes").value_or(0), 1 << 20);
  EXPECT_GT(sampleValue(text, "process_open_fds").value_or(0), 2);
  EXPECT_NEAR(sampleValue(text, "process_start_time_seconds").value_or(0),
              kafka::wallClockSeconds(), 3600);
  // The libraries as this process runs them (their own version functions, not the headers'
  // macros); the revision label appears only when the build was given one (-DFRAUD_REVISION=...).
  const std::string build = "\nfraud_detector_build_info{";
  const auto line_start = text.find(build);
  ASSERT_NE(line_start, std::string::npos) << text;
  const auto line = text.substr(line_start + 1, text.find('\n', line_start + 1) - line_start - 1);
  EXPECT_THAT(line, HasSubstr("{librdkafka=\"" + std::string(rd_kafka_version_str()) + "\","));
  EXPECT_THAT(line, HasSubstr(",rocksdb=\"" + rocksdb::GetRocksVersionAsString() + "\","));
  EXPECT_THAT(line, HasSubstr(",version=\"" + std::string(kVersion) + "\"}"));
  EXPECT_TRUE(line.ends_with("} 1")) << line;

  // promtool (Debian's prometheus package; scripts/setup installs it) lints the exposition.
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    const std::string path = ::testing::TempDir() + "/process-metrics.txt";
    std::ofstream(path) << text;
    const std::string command = "promtool check metrics < '" + path + "' 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
    const int status = ::pclose(pipe);
    std::remove(path.c_str());
    EXPECT_EQ(status, 0) << out;
  }
  server.stop();
}

std::string fileText(const std::string& relative) {
  std::ifstream in(std::string(FRAUD_SOURCE_DIR) + "/" + relative);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every family service/metrics.cc declares: documented in docs/operations.md's table, and on
// /metrics from the start, at zero, so that a dashboard or an alert on it reads 0 rather than
// "no data" until its first event. A family kept per partition (its labels column names
// `partition`) appears with the first partition held or copied here: no series exists before.
TEST(ServiceMetrics, EveryFamilyIsDocumentedAndExposedFromTheStart) {
  ServiceRegistry registry;
  ServiceMetrics metrics(registry);
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  const std::string source = fileText("service/metrics.cc");
  const std::string doc = fileText("docs/operations.md");
  ASSERT_FALSE(source.empty());
  ASSERT_FALSE(doc.empty());
  size_t declared = 0;
  for (size_t at = 0; (at = source.find(".Name(\"fraud_", at)) != std::string::npos; ++at) {
    const size_t begin = at + 7;
    const std::string name = source.substr(begin, source.find('"', begin) - begin);
    ++declared;
    const auto row = doc.find("\n| `" + name + "` |");
    ASSERT_NE(row, std::string::npos) << name << " is not in docs/operations.md's table";
    const std::string line = doc.substr(row + 1, doc.find('\n', row + 1) - row - 1);
    const auto type_end = line.find('|', line.find('|', 2) + 1);
    const std::string labels = line.substr(type_end, line.find('|', type_end + 1) - type_end);
    if (labels.find("`partition`") != std::string::npos) continue;
    EXPECT_THAT(text, HasSubstr("# TYPE " + name + " ")) << name << " is not exposed at start";
  }
  EXPECT_GT(declared, 25u);
}

}  // namespace
}  // namespace fraud::service
