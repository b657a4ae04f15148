// PoisonKillLoopTest's members: the kill loop (slices produced, instances killed and restarted,
// and what a stall is reported with), then the checks at its end (the alerts topic against
// `replay` of each input partition, and every rejected record on the dead-letter topic once).
#include "tests/integration/service/poison_kill_loop_fixture.h"

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "detectors/partitioner.h"
#include "tests/support/http_probe.h"

namespace fraud::testing {

std::string tail(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) {
    out += lines[i] + "\n";
  }
  return out;
}

namespace {

// The last `count` distinct log lines of `text` (compared without their leading timestamp), so
// one message repeated a thousand times does not hide the others.
std::string recentDistinctLines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::set<std::string> seen;
  std::vector<std::string> picked;
  for (auto it = lines.rbegin(); it != lines.rend() && picked.size() < count; ++it) {
    const auto space = it->find(' ');
    if (seen.insert(space == std::string::npos ? *it : it->substr(space + 1)).second) {
      picked.push_back(*it);
    }
  }
  std::reverse(picked.begin(), picked.end());
  std::string out;
  for (const auto& line : picked) out += "    " + line + "\n";
  return out;
}

}  // namespace

void PoisonKillLoopTest::SetUp() {
  LiveServiceTest::SetUp();
  if (IsSkipped()) return;
  produced_.resize(kPartitions);
  // Large enough for the oversized values; below it the broker would refuse them, not us.
  raw_ = std::make_unique<RawProducer>(kafka_->brokers(), kBrokerMaxMessageBytes);
}

void PoisonKillLoopTest::TearDown() {
  raw_.reset();
  LiveServiceTest::TearDown();
}

std::vector<Produced> PoisonKillLoopTest::sliceRecords(const std::vector<TestRecord>& stream,
                                                       size_t begin, size_t end, int slice) {
  std::vector<Produced> records;
  for (size_t i = begin; i < end; ++i) {
    const bool malformed = stream[i].value.find("\"event_time\"") == std::string::npos;
    records.push_back(
        {stream[i].key, stream[i].value, malformed ? "malformed" : "valid", malformed});
  }
  std::mt19937_64 random(static_cast<uint64_t>(slice) + 7);
  // A card of the stream whose partition turns with the slice: over any kPartitions slices,
  // each kind of poison record lands in every partition.
  auto card = [&](int kind) {
    const int32_t partition = (slice + kind) % kPartitions;
    for (int c = (slice * 37 + kind * 11) % 500;; c = (c + 1) % 500) {
      std::string name = "card-" + std::to_string(1000 + c);
      if (detectors::partitionCrc32(name, kPartitions) == partition) return name;
    }
  };
  const std::string s = std::to_string(slice);
  const size_t big = slice % 2 == 0 ? kOversizedSmall : kOversizedLarge;
  std::string oversized =
      R"({"tx_id":"oversized-)" + s + R"(","card":")" + card(0) + R"(","country":"DE","pad":")";
  oversized.resize(big, 'x');  // an unterminated string: invalid JSON
  std::vector<Produced> poisons = {
      {card(0), std::move(oversized), "oversized", true},
      {card(1), std::nullopt, "tombstone", true},
      {card(2), std::string(), "empty", true},
      {card(3), std::string("\xff\xfe\x80 not UTF-8 \xc0\xaf"), "not-utf8", true},
      {card(4),
       R"({"tx_id":"bad-)"
       "\xc3\x28"
       "-" +
           s + R"(","card":")" + card(4) +
           R"(","country":"FR","event_time":1700000000000,"amount":1})",
       "bad-utf8-in-json", true},
  };
  for (auto& poison : poisons) {
    const auto at = static_cast<std::ptrdiff_t>(random() % (records.size() + 1));
    records.insert(records.begin() + at, std::move(poison));
  }
  return records;
}

void PoisonKillLoopTest::produceSlice(const std::vector<Produced>& records) {
  for (const auto& r : records) {
    const int32_t p = detectors::partitionCrc32(r.key, kPartitions);
    raw_->produce(input_, p, r.key,
                  r.value ? std::optional<std::string_view>(*r.value) : std::nullopt);
    produced_[static_cast<size_t>(p)].push_back(r);
  }
  raw_->flush();
}

void PoisonKillLoopTest::start(const std::string& name) {
  const uint16_t port = freeTcpPort();
  ports_[name] = port;
  current_[name] = &startInstance(name, {"--http-port", std::to_string(port)});
}

std::string PoisonKillLoopTest::url(const std::string& name, const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(ports_.at(name)) + path;
}

void PoisonKillLoopTest::expectRunning(const std::string& name) {
  ChildProcess& child = *current_.at(name);
  if (child.running()) return;
  ADD_FAILURE() << "instance " << name << " exited on its own with status "
                << child.waitExit(seconds(0)).value_or(-1) << "; last log lines:\n"
                << tail(child.stderrText(), 15);
  start(name);
}

void PoisonKillLoopTest::killAndRestart(const std::string& name) {
  expectRunning(name);
  ChildProcess& child = *current_.at(name);
  child.signal(SIGKILL);
  ASSERT_TRUE(child.waitExit(seconds(10)).has_value()) << name << " survived SIGKILL";
  start(name);
}

bool PoisonKillLoopTest::waitFor(const std::function<bool()>& condition,
                                 std::chrono::seconds timeout) {
  const auto until = std::min(Clock::now() + timeout, deadline_);
  while (true) {
    if (condition()) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string PoisonKillLoopTest::describe() {
  std::ostringstream out;
  const auto ends = kafka_->endOffsets(input_);
  const auto committed = kafka_->committedOffsets(group_, input_);
  out << "input partition: committed offset / end offset\n";
  for (size_t p = 0; p < ends.size(); ++p) {
    const int64_t c = p < committed.size() ? committed[p] : -1;
    out << "  " << p << ": " << (c < 0 ? "none" : std::to_string(c)) << " / " << ends[p];
    if (c < ends[p]) out << "  (" << ends[p] - std::max<int64_t>(c, 0) << " behind)";
    out << "\n";
  }
  for (const auto& [name, child] : current_) {
    out << "instance " << name << ": "
        << (child->running() ? "running"
                             : "exited " + std::to_string(child->waitExit(seconds(0)).value_or(-1)))
        << "\n";
    out << "  GET /healthz -> " << httpGet(url(name, "/healthz")).status << "\n";
    const auto ready = httpGet(url(name, "/readyz"));
    out << "  GET /readyz -> " << ready.status << " " << ready.body << "\n";
    const auto parts = httpGet(url(name, "/v1/partitions"));
    out << "  GET /v1/partitions -> " << parts.status << " " << parts.body << "\n";
    out << "  last distinct log lines:\n" << recentDistinctLines(child->stderrText(), 8);
  }
  out << "logs in " << work_.string() << "\n";
  return out.str();
}

bool PoisonKillLoopTest::caughtUp() {
  last_ends_ = kafka_->endOffsets(input_);
  last_committed_ = kafka_->committedOffsets(group_, input_);
  if (last_committed_.size() != last_ends_.size()) return false;
  for (size_t p = 0; p < last_ends_.size(); ++p) {
    if (last_committed_[p] < last_ends_[p]) return false;
  }
  return true;
}

std::pair<int, std::string> PoisonKillLoopTest::kafkaScript(const std::vector<std::string>& args) {
  std::string command = std::string(FRAUD_SOURCE_DIR) + "/scripts/kafka";
  for (const auto& a : args) command += " '" + a + "'";
  command += " --dir '" + kafka_dir_ + "' 2>&1";
  std::string out;
  int status = -1;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
    status = ::pclose(pipe);
  }
  return {status, out};
}

bool PoisonKillLoopTest::runSlice(const KillLoopPlan& plan, const std::vector<TestRecord>& stream,
                                  int slice, int kills) {
  const auto before = kafka_->endOffsets(input_);
  const auto begin = static_cast<size_t>(slice) * static_cast<size_t>(plan.records_per_slice);
  const auto records =
      sliceRecords(stream, begin, begin + static_cast<size_t>(plan.records_per_slice), slice);
  const auto half = records.begin() + static_cast<std::ptrdiff_t>(records.size() / 2);
  produceSlice({records.begin(), half});
  // The first half is being processed: some partition commits past where it started.
  const bool progress = waitFor(
      [&] {
        const auto committed = kafka_->committedOffsets(group_, input_);
        for (size_t p = 0; p < before.size() && p < committed.size(); ++p) {
          if (committed[p] > before[p]) return true;
        }
        return false;
      },
      seconds(60));
  if (!progress) {
    ADD_FAILURE() << "slice " << slice << " (after " << kills
                  << " kills): no input partition committed any of its records within "
                  << (Clock::now() >= deadline_ ? "the run's budget" : "60 s") << "\n"
                  << describe();
    return false;
  }
  // The second half, then the kills at once: they land while it is being processed.
  produceSlice({half, records.end()});
  return true;
}

void PoisonKillLoopTest::restartBroker(int slice) {
  const auto killed = kafkaScript({"kill-broker", "1"});
  ASSERT_EQ(killed.first, 0) << killed.second;
  const auto restarted = kafkaScript({"start-broker", "1"});
  ASSERT_EQ(restarted.first, 0) << restarted.second;
  std::printf("slice %d: broker killed and restarted\n", slice);
}

void PoisonKillLoopTest::expectCaughtUpAndReady(bool stalled, int kills) {
  // Every partition committed to its end. After a stall, a short grace only: it is known.
  const bool caught_up = waitFor([&] { return caughtUp(); }, seconds(stalled ? 20 : 120));
  if (!caught_up) {
    ADD_FAILURE() << "the input was not processed to its end (after " << kills << " kills)\n"
                  << describe();
  } else {
    for (size_t p = 0; p < produced_.size(); ++p) {
      EXPECT_EQ(last_ends_.at(p), static_cast<int64_t>(produced_[p].size())) << "partition " << p;
      EXPECT_EQ(last_committed_.at(p), last_ends_.at(p)) << "partition " << p << " committed";
    }
  }
  expectRunning("a");
  expectRunning("b");
  const bool ready = waitFor(
      [&] {
        return httpGet(url("a", "/readyz")).status == 200 &&
               httpGet(url("b", "/readyz")).status == 200;
      },
      seconds(stalled ? 5 : 60));
  if (!ready) {
    ADD_FAILURE() << "not both instances answer /readyz with 200 at the end"
                  << (caught_up ? "\n" + describe() : std::string(" (answers above)"));
  }
}

void PoisonKillLoopTest::runKillLoop(const KillLoopPlan& plan) {
  const auto started = Clock::now();
  deadline_ = started + plan.budget;
  StreamOptions options;
  options.records = plan.slices * plan.records_per_slice;
  options.cards = 500;
  const auto stream = generateStream(options);

  start("a");
  start("b");
  bool stalled = false;
  int kills = 0;
  int produced_slices = 0;
  for (int s = 0; s < plan.slices; ++s) {
    if (!runSlice(plan, stream, s, kills)) {
      stalled = true;
      break;
    }
    ++produced_slices;
    if (s == plan.broker_restart_after_slice) {
      restartBroker(s);
      if (HasFatalFailure()) return;
    }
    const std::string victim = s % 2 == 0 ? "a" : "b";
    expectRunning(victim == "a" ? "b" : "a");
    killAndRestart(victim);
    ++kills;
    std::printf("slice %d produced and %s killed at %.1f s\n", s, victim.c_str(),
                std::chrono::duration<double>(Clock::now() - started).count());
  }
  expectCaughtUpAndReady(stalled, kills);

  expectAlertsEqualReplay();
  expectEachRejectedRecordDeadLetteredOnce(/*every_slice=*/produced_slices == plan.slices);

  for (const auto& [name, child] : current_) {
    child->signal(SIGTERM);
    EXPECT_EQ(child->waitExit(seconds(25)), 0) << name << ":\n" << tail(child->stderrText(), 15);
  }
  size_t records = 0;
  for (const auto& p : produced_) records += p.size();
  std::printf("%d slices, %d kills, %zu records: %.1f s\n", produced_slices, kills, records,
              std::chrono::duration<double>(Clock::now() - started).count());
}

// The checks at the end of a kill loop.

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
