// AuditWriter: audit lines reach their logger in order, stamped with the time they were handed
// over, on a thread of the writer's own; while the sink blocks, write() does not, and a line
// beyond the queue is dropped, counted and warned about, at most once an interval.
#include "api/audit_writer.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/api/gated_sink.h"

namespace fraud::api {
namespace {

using fraud::testing::GatedSink;
using std::chrono::milliseconds;

constexpr milliseconds kLimit{10'000};  // what a condition waits at most; met at once when right

std::shared_ptr<spdlog::logger> loggerOn(std::shared_ptr<spdlog::sinks::sink> sink) {
  auto logger = std::make_shared<spdlog::logger>("audit", std::move(sink));
  logger->set_pattern("%l %v");
  return logger;
}

double droppedTotal(prometheus::Registry& registry) {
  for (const auto& family : registry.Collect()) {
    if (family.name == "fraud_audit_dropped_total") return family.metric.at(0).counter.value;
  }
  ADD_FAILURE() << "no fraud_audit_dropped_total";
  return -1;
}

class AuditWriterTest : public ::testing::Test {
 protected:
  AuditWriterTest()
      : audit_(std::make_shared<GatedSink>()),
        warnings_(std::make_shared<GatedSink>(/*open=*/true)) {
    options_.warnings = loggerOn(warnings_);
  }
  ~AuditWriterTest() override { audit_->open(); }  // never leave a writer waiting on it

  AuditWriter& writer() {
    if (!writer_) writer_ = std::make_unique<AuditWriter>(loggerOn(audit_), registry_, options_);
    return *writer_;
  }

  prometheus::Registry registry_;
  std::shared_ptr<GatedSink> audit_;
  std::shared_ptr<GatedSink> warnings_;
  AuditWriter::Options options_;
  std::unique_ptr<AuditWriter> writer_;
};

TEST_F(AuditWriterTest, LinesAreWrittenInOrderAtInfoWithTheTimeTheyWereHandedOver) {
  (void)writer();
  EXPECT_EQ(droppedTotal(registry_), 0) << "registered at zero";
  const auto before = spdlog::log_clock::now();
  ASSERT_TRUE(writer().write("card_lookup one {}"));  // not a format string
  ASSERT_TRUE(writer().write("card_lookup two"));
  const auto handed = spdlog::log_clock::now();
  EXPECT_TRUE(audit_->waitEntered(kLimit));
  audit_->open();  // written from now on, after `handed`
  writer().flush();
  EXPECT_EQ(audit_->lines(),
            (std::vector<std::string>{"info card_lookup one {}\n", "info card_lookup two\n"}));
  for (const auto time : audit_->times()) {
    EXPECT_GE(time, before);
    EXPECT_LE(time, handed) << "stamped when handed over, not when the sink took it";
  }
  EXPECT_EQ(writer().dropped(), 0u);
  EXPECT_TRUE(warnings_->lines().empty());
}

TEST_F(AuditWriterTest, ABlockedSinkDropsWhatTheQueueCannotHoldCountsItAndWarnsOnce) {
  options_.max_queued_lines = 4;
  options_.warn_every = std::chrono::hours(1);
  int accepted = 0;
  for (int i = 0; i < 10; ++i) accepted += writer().write("card_lookup " + std::to_string(i));
  EXPECT_EQ(accepted, 4) << "the queue holds 4 lines, the one at the sink among them";
  EXPECT_EQ(writer().dropped(), 6u);
  EXPECT_EQ(droppedTotal(registry_), 6);

  audit_->open();
  writer().flush();
  ASSERT_EQ(audit_->lines().size(), 4u);
  EXPECT_EQ(audit_->lines().back(), "info card_lookup 3\n") << "the first four, in order";
  ASSERT_TRUE(warnings_->waitLines(1, kLimit)) << "no warning of the drops";
  EXPECT_NE(warnings_->lines()[0].find("warning audit log behind: 6 card-lookup audit line(s) "
                                       "dropped since the last warning (6 in all)"),
            std::string::npos)
      << warnings_->lines()[0];

  // Behind again within the interval: counted, not warned about until the writer stops.
  audit_->close();
  for (int i = 0; i < 10; ++i) (void)writer().write("card_lookup again");
  EXPECT_EQ(writer().dropped(), 12u);
  EXPECT_EQ(droppedTotal(registry_), 12);
  audit_->open();
  writer().flush();
  EXPECT_EQ(audit_->lines().size(), 8u);
  EXPECT_EQ(warnings_->lines().size(), 1u) << "at most one warning an interval";
  writer_.reset();
  ASSERT_EQ(warnings_->lines().size(), 2u) << "the drops since are warned about on stopping";
  EXPECT_NE(warnings_->lines()[1].find("6 card-lookup audit line(s) dropped since the last "
                                       "warning (12 in all)"),
            std::string::npos)
      << warnings_->lines()[1];
}

TEST_F(AuditWriterTest, DropsAfterTheIntervalAreWarnedAgain) {
  options_.max_queued_lines = 1;
  options_.warn_every = milliseconds(0);
  ASSERT_TRUE(writer().write("card_lookup first"));
  EXPECT_FALSE(writer().write("card_lookup dropped"));
  audit_->open();
  writer().flush();
  ASSERT_TRUE(warnings_->waitLines(1, kLimit));
  audit_->close();
  ASSERT_TRUE(writer().write("card_lookup second"));
  EXPECT_FALSE(writer().write("card_lookup dropped again"));
  audit_->open();
  ASSERT_TRUE(warnings_->waitLines(2, kLimit)) << "a second interval, a second warning";
  EXPECT_NE(warnings_->lines()[1].find("1 card-lookup audit line(s) dropped since the last "
                                       "warning (2 in all)"),
            std::string::npos)
      << warnings_->lines()[1];
}

TEST_F(AuditWriterTest, StoppingWritesWhatIsQueued) {
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(writer().write("card_lookup " + std::to_string(i)));
  audit_->open();
  writer_.reset();
  ASSERT_EQ(audit_->lines().size(), 100u);
  EXPECT_EQ(audit_->lines()[99], "info card_lookup 99\n");
}

TEST_F(AuditWriterTest, AFlushWithNothingQueuedReturnsAtOnce) {
  audit_->open();
  writer().flush();
  EXPECT_TRUE(audit_->lines().empty());
}

}  // namespace
}  // namespace fraud::api
