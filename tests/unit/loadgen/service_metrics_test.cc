// Reading the service's record counts from its /metrics: the Prometheus text, the URL, and a
// real HTTP exchange with a listener on 127.0.0.1.
#include "loadgen/service_metrics.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loadgen/production.h"

namespace fraud::loadgen {
namespace {

constexpr std::string_view kMetrics = R"(# HELP fraud_records_total Input records by outcome
# TYPE fraud_records_total counter
fraud_records_total{outcome="accepted"} 19500
fraud_records_total{outcome="late_dropped"} 400
fraud_records_total{outcome="duplicate"} 40
fraud_records_total{outcome="rejected"} 20
# HELP fraud_rejected_records_total Rejected input records by reason
# TYPE fraud_rejected_records_total counter
fraud_rejected_records_total{reason="invalid_json"} 20
fraud_records_total_other{outcome="late_dropped"} 999
)";

TEST(ServiceMetrics, ReadsTheRecordsByOutcome) {
  const auto counts = recordCountsIn(kMetrics);
  ASSERT_TRUE(counts) << counts.message();
  EXPECT_EQ(counts->accepted, 19'500);
  EXPECT_EQ(counts->late_dropped, 400);
  EXPECT_EQ(counts->duplicate, 40);
  EXPECT_EQ(counts->rejected, 20);
  EXPECT_EQ(counts->valid(), 19'940);
  EXPECT_EQ(counts->total(), 19'960);
  const auto run = counts->since({19'000, 300, 40, 0});
  EXPECT_EQ(run.accepted, 500);
  EXPECT_EQ(run.late_dropped, 100);
}

TEST(ServiceMetrics, AServiceThatCountedNothingYetReadsZeroAndAnotherEndpointIsRefused) {
  const auto fresh = recordCountsIn("# TYPE fraud_state_bytes gauge\nfraud_state_bytes 0\n");
  ASSERT_TRUE(fresh) << fresh.message();
  EXPECT_EQ(fresh->total(), 0);
  const auto other = recordCountsIn("# TYPE go_goroutines gauge\ngo_goroutines 7\n");
  EXPECT_FALSE(other);
  EXPECT_NE(other.message().find("not the /metrics of fraud-detector"), std::string::npos);
}

TEST(ServiceMetrics, TakesPlainHttpUrlsOnly) {
  const auto url = parseHttpUrl("http://127.0.0.1:9464");
  ASSERT_TRUE(url) << url.message();
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, "9464");
  EXPECT_EQ(url->path, "/metrics");
  const auto v6 = parseHttpUrl("http://[::1]:8080/x/metrics");
  ASSERT_TRUE(v6) << v6.message();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->path, "/x/metrics");
  EXPECT_EQ(parseHttpUrl("http://svc/metrics")->port, "80");
  for (const char* bad : {"https://svc:1/metrics", "svc:1", "http://:1/", "http://svc:0/",
                          "http://svc:99999/", "http://user:pw@svc:1/", "http://svc:x/"}) {
    EXPECT_FALSE(parseHttpUrl(bad)) << bad;
  }
}

TEST(ServiceMetrics, ARunRefusesUrlsItCannotReadAndTheFlagWithoutABroker) {
  ProductionOptions o;
  o.count = 10;
  o.output_single = "/dev/null";
  o.service_metrics = {"http://127.0.0.1:8081/metrics"};
  auto problems = o.validate(false);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("--service-metrics needs --brokers"), std::string::npos);
  o.brokers = "127.0.0.1:9092";
  EXPECT_TRUE(o.validate(false).empty());
  o.service_metrics.emplace_back("https://127.0.0.1:8081/metrics");
  problems = o.validate(false);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("not an http:// URL"), std::string::npos);
}

// Answers connections on 127.0.0.1, one answer each in turn, then refuses them; url() says where.
class Answers {
 public:
  explicit Answers(std::vector<std::string> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      for (const auto& answer : answers_) {
        const int client = ::accept(fd_, nullptr, nullptr);
        if (client < 0) return;
        std::string got;
        std::array<char, 4096> buffer{};
        while (got.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = ::recv(client, buffer.data(), buffer.size(), 0);
          if (n <= 0) break;
          got.append(buffer.data(), static_cast<size_t>(n));
        }
        if (first_request_.empty()) first_request_ = got;
        ::send(client, answer.data(), answer.size(), MSG_NOSIGNAL);
        ::close(client);
      }
      ::shutdown(fd_, SHUT_RDWR);  // no more answers: later connections are refused
    });
  }
  explicit Answers(std::string answer) : Answers(std::vector<std::string>{std::move(answer)}) {}
  ~Answers() {
    ::shutdown(fd_, SHUT_RDWR);  // ends an accept() that no client came to
    thread_.join();
    ::close(fd_);
  }
  Answers(const Answers&) = delete;
  Answers& operator=(const Answers&) = delete;

  [[nodiscard]] std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/metrics";
  }
  // What the first client sent; read after the exchange.
  [[nodiscard]] const std::string& firstRequest() const { return first_request_; }

 private:
  std::vector<std::string> answers_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string first_request_;
  std::thread thread_;
};

std::string metricsAnswer(int accepted, int late_dropped, int duplicate, int rejected) {
  std::string body = "# TYPE fraud_records_total counter\n";
  for (const auto& [outcome, value] : {std::pair{"accepted", accepted},
                                       {"late_dropped", late_dropped},
                                       {"duplicate", duplicate},
                                       {"rejected", rejected}}) {
    body += std::string("fraud_records_total{outcome=\"") + outcome + "\"} " +
            std::to_string(value) + "\n";
  }
  return "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\r\n" + body;
}

TEST(ServiceTally, CountsTheRunsRecordsOnceTheServiceHasThemAll) {
  // Before the run; then the service has counted 40 of the run's 60 records; then all of them.
  Answers service({metricsAnswer(1000, 10, 0, 5), metricsAnswer(1030, 15, 0, 5),
                   metricsAnswer(1040, 20, 5, 10)});
  ServiceTally tally({service.url()});
  ASSERT_TRUE(tally.start().ok());
  tally.finish(60, 30);
  const auto summary = tally.summary();
  EXPECT_EQ(summary["instances"], 1);
  EXPECT_EQ(summary["records"], 55);  // 40 accepted, 10 dropped, 5 duplicates (5 rejected)
  EXPECT_EQ(summary["late_dropped"], 10);
  EXPECT_DOUBLE_EQ(summary["late_dropped_share"].get<double>(), 10.0 / 55);
  EXPECT_EQ(summary["counted_all"], true);
}

TEST(ServiceTally, SaysWhenTheServiceHadNotCountedEverythingOrCouldNotBeRead) {
  {
    Answers service({metricsAnswer(0, 0, 0, 0), metricsAnswer(10, 1, 0, 0)});
    ServiceTally tally({service.url()});
    ASSERT_TRUE(tally.start().ok());
    tally.finish(100, 0);  // no wait: one read
    EXPECT_EQ(tally.summary()["counted_all"], false);
    EXPECT_EQ(tally.summary()["records"], 11);
  }
  {
    Answers service(std::vector<std::string>{metricsAnswer(0, 0, 0, 0)});
    ServiceTally tally({service.url()});
    ASSERT_TRUE(tally.start().ok());
    tally.finish(100, 0);
    const auto summary = tally.summary();
    ASSERT_TRUE(summary.is_string());
    EXPECT_EQ(summary.get<std::string>().rfind("not read: " + service.url(), 0), 0u) << summary;
  }
}

TEST(ServiceMetrics, ScrapesAndSumsEveryInstance) {
  const std::string body(kMetrics);
  std::optional<ServiceRecordCounts> counts;
  {
    Answers a("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body);
    Answers b("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
              "\r\nConnection: close\r\n\r\n" + body);
    const auto scraped = scrapeRecordCounts({a.url(), b.url()});
    ASSERT_TRUE(scraped) << scraped.message();
    counts = *scraped;
    EXPECT_EQ(a.firstRequest().rfind("GET /metrics HTTP/1.0\r\n", 0), 0u) << a.firstRequest();
  }
  EXPECT_EQ(counts->late_dropped, 800);
  EXPECT_EQ(counts->total(), 2 * 19'960);
}

TEST(ServiceMetrics, NamesTheInstanceThatCouldNotBeRead) {
  {
    Answers refused("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
    const auto error = scrapeRecordCounts({refused.url()}).message();
    EXPECT_NE(error.find(refused.url() + ": answered HTTP/1.1 503"), std::string::npos) << error;
  }
  {
    Answers chunked("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    const auto error = scrapeRecordCounts({chunked.url()}).message();
    EXPECT_NE(error.find("transfer encoding"), std::string::npos) << error;
  }
  // Nothing listens there any more.
  std::string closed_url;
  { closed_url = Answers("HTTP/1.0 200 OK\r\n\r\nfraud_x 1\n").url(); }
  const auto error = scrapeRecordCounts({closed_url}).message();
  EXPECT_NE(error.find("cannot connect"), std::string::npos) << error;
}

}  // namespace
}  // namespace fraud::loadgen
