// The end of a kill loop: the alerts topic against `replay` of each input partition, and every
// rejected record on the dead-letter topic once.
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "tests/integration/service/poison_kill_loop_fixture.h"

namespace fraud::testing {

AlertSet PoisonKillLoopTest::replayEachPartition() {
  AlertSet expected;
  for (int p = 0; p < kPartitions; ++p) {
    const auto& records = produced_[static_cast<size_t>(p)];
    const auto input = work_ / ("partition-" + std::to_string(p) + ".jsonl");
    const auto output = work_ / ("expected-" + std::to_string(p) + ".jsonl");
    int rejected_lines = 0;
    int lines = 0;
    {
      std::ofstream file(input, std::ios::binary);
      for (const auto& r : records) {
        file << r.value.value_or("") << '\n';
        if (r.value && !r.value->empty()) {
          ++lines;
          rejected_lines += r.rejected;
        }
      }
    }
    ChildProcess replay(
        FRAUD_DETECTOR_BIN, {"replay", "--input", input.string(), "--output", output.string()},
        {{"FRAUD_CARD_HASH_KEY", kKey}}, (work_ / ("replay-" + std::to_string(p))).string());
    EXPECT_EQ(replay.waitExit(seconds(120)), 0) << replay.stderrText();
    std::string last = tail(replay.stderrText(), 1);
    if (!last.empty()) last.pop_back();
    const json summary = json::parse(last, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(summary.is_object()) << "replay's summary line: " << last;
    if (!summary.is_object()) continue;
    EXPECT_EQ(summary.value("records", -1), lines) << "partition " << p << ": " << last;
    int replay_rejected = 0;
    if (summary.contains("rejected")) {
      for (const auto& [reason, count] : summary.at("rejected").items()) {
        replay_rejected += count.get<int>();
      }
    }
    EXPECT_EQ(replay_rejected, rejected_lines) << "partition " << p << ": " << last;
    std::ifstream alerts(output);
    for (std::string line; std::getline(alerts, line);) expected.add(line);
  }
  return expected;
}

void PoisonKillLoopTest::expectAlertsEqualReplay() {
  const AlertSet expected = replayEachPartition();
  const AlertSet actual = actualAlerts();
  EXPECT_GT(expected.by_key.size(), 100u) << "the stream should raise many alerts";
  EXPECT_EQ(actual.duplicates, 0) << "idempotency keys written more than once (read_committed)";
  int missing = 0;
  int differing = 0;
  int unexpected = 0;
  std::ostringstream examples;
  for (const auto& [key, alert] : expected.by_key) {
    const auto it = actual.by_key.find(key);
    if (it == actual.by_key.end()) {
      if (missing++ < 5) examples << "  missing " << key << "\n";
    } else if (it->second != alert) {
      if (differing++ < 5)
        examples << "  differs " << key << ": " << it->second.dump() << " vs replay "
                 << alert.dump() << "\n";
    }
  }
  for (const auto& [key, alert] : actual.by_key) {
    if (expected.by_key.count(key) == 0 && unexpected++ < 5)
      examples << "  unexpected " << alert.dump() << "\n";
  }
  EXPECT_TRUE(missing == 0 && differing == 0 && unexpected == 0)
      << "alerts topic vs replay of each partition (" << expected.by_key.size() << " expected, "
      << actual.by_key.size() << " on the topic): " << missing << " missing, " << differing
      << " differing, " << unexpected << " unexpected\n"
      << examples.str();
}

namespace {

// What is wrong with the dead letters, by kind of record: how many, and the first few.
class DeadLetterProblems {
 public:
  void add(const std::string& kind, const std::string& text) {
    auto& [count, examples] = by_kind_[kind];
    if (count++ < 3) examples += "  " + text + "\n";
    ++count_;
  }
  [[nodiscard]] int count() const { return count_; }
  [[nodiscard]] int countOf(const std::string& kind) const {
    const auto it = by_kind_.find(kind);
    return it == by_kind_.end() ? 0 : it->second.first;
  }
  [[nodiscard]] std::string examples() const {
    std::string text;
    for (const auto& [kind, problems] : by_kind_) text += problems.second;
    return text;
  }

 private:
  std::map<std::string, std::pair<int, std::string>> by_kind_;
  int count_ = 0;
};

std::optional<std::string> headerOf(const TopicRecord& record, const std::string& name) {
  const auto it = record.headers.find(name);
  return it == record.headers.end() ? std::optional<std::string>() : it->second;
}

// The dead letter of an oversized record: a prefix of it that fits the service producer's
// limit, marked truncated with the original size.
void checkTruncated(const TopicRecord& record, const Produced& original, const std::string& where,
                    DeadLetterProblems& problems) {
  const auto header = [&](const std::string& name) { return headerOf(record, name); };
  size_t wire = record.key.value_or("").size() + record.value.value_or("").size();
  for (const auto& [name, value] : record.headers) wire += name.size() + value.size();
  const std::string& full = *original.value;
  if (header("truncated") != "true" || header("original-size") != std::to_string(full.size()) ||
      !record.value || record.value->size() >= full.size() ||
      full.compare(0, record.value->size(), *record.value) != 0 ||
      wire > kServiceProducerMaxBytes) {
    problems.add(original.kind,
                 where + " (oversized, " + std::to_string(full.size()) +
                     " bytes): expected a prefix of at most " +
                     std::to_string(kServiceProducerMaxBytes) +
                     " bytes with headers, truncated: true, original-size; got " +
                     std::to_string(record.value.value_or("").size()) +
                     " bytes, truncated: " + header("truncated").value_or("(none)") +
                     ", original-size: " + header("original-size").value_or("(none)"));
  }
}

// The dead letter of a rejected `original` record: its source, reason, key and value.
void checkDeadLetter(const TopicRecord& record, const Produced& original, const std::string& where,
                     const std::string& input_topic, DeadLetterProblems& problems) {
  const auto header = [&](const std::string& name) { return headerOf(record, name); };
  if (header("source-topic") != input_topic) problems.add(original.kind, where + ": source-topic");
  if (header("reject-reason") != "invalid_json")
    problems.add(original.kind, where + " (" + original.kind + "): reject-reason " +
                                    header("reject-reason").value_or("(none)"));
  if (record.key != original.key) problems.add(original.kind, where + ": key differs");
  if (original.kind == "oversized") {
    checkTruncated(record, original, where, problems);
    return;
  }
  if (record.value != original.value)
    problems.add(original.kind, where + " (" + original.kind + "): value differs from the input");
  if (header("truncated").value_or("false") != "false")
    problems.add(original.kind, where + " (" + original.kind + "): marked truncated");
}

}  // namespace

void PoisonKillLoopTest::expectEachRejectedRecordDeadLetteredOnce(bool every_slice) {
  std::map<std::pair<int32_t, int64_t>, int> seen;
  DeadLetterProblems problems;
  const auto dead = kafka_->readAll(dlq_);
  for (const auto& record : dead) {
    const auto partition = headerOf(record, "source-partition");
    const auto offset = headerOf(record, "source-offset");
    if (!partition || !offset) {
      problems.add("?", "a dead letter without source-partition/source-offset headers");
      continue;
    }
    const int32_t p = std::stoi(*partition);
    const int64_t o = std::stoll(*offset);
    const std::string where = std::to_string(p) + "/" + std::to_string(o);
    if (p < 0 || p >= kPartitions || o < 0 ||
        o >= static_cast<int64_t>(produced_[static_cast<size_t>(p)].size())) {
      problems.add("?", "a dead letter for " + where + ", which was never produced");
      continue;
    }
    const Produced& original = produced_[static_cast<size_t>(p)][static_cast<size_t>(o)];
    if (!original.rejected) {
      problems.add(original.kind,
                   "a dead letter for " + where + ", a " + original.kind + " record");
      continue;
    }
    ++seen[{p, o}];
    checkDeadLetter(record, original, where, input_, problems);
  }
  std::map<std::string, int> rejected_by_kind;
  std::map<std::string, std::set<int32_t>> partitions_by_kind;
  for (int32_t p = 0; p < kPartitions; ++p) {
    const auto& records = produced_[static_cast<size_t>(p)];
    for (size_t o = 0; o < records.size(); ++o) {
      if (!records[o].rejected) continue;
      ++rejected_by_kind[records[o].kind];
      partitions_by_kind[records[o].kind].insert(p);
      const int count = seen[{p, static_cast<int64_t>(o)}];
      const std::string where = std::to_string(p) + "/" + std::to_string(o);
      if (count == 0) problems.add(records[o].kind, where + " (" + records[o].kind + "): missing");
      if (count > 1)
        problems.add(records[o].kind,
                     where + " (" + records[o].kind + "): " + std::to_string(count) + " times");
    }
  }
  for (const auto& [kind, partitions] : partitions_by_kind) {
    if (!every_slice) continue;
    EXPECT_EQ(partitions.size(), static_cast<size_t>(kPartitions))
        << kind << " records should reach every partition";
  }
  std::ostringstream summary;
  for (const auto& [kind, n] : rejected_by_kind) {
    summary << " " << kind << " " << n << " (" << problems.countOf(kind) << " wrong)";
  }
  EXPECT_EQ(problems.count(), 0) << "dead-letter topic (" << dead.size()
                                 << " records, read_committed) vs the rejected input records:"
                                 << summary.str() << "\n"
                                 << problems.examples();
}

}  // namespace fraud::testing
