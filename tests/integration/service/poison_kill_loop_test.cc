// Poison records and a SIGKILL after every slice of input (issue 9), on a real broker.
//
// Two `fraud-detector run` instances share one group. The input is produced in slices of valid
// transactions mixed with records the contract rejects (docs/rule.md §1: a rejected record "never
// stops processing"): a value as large as the broker takes, whose dead-letter copy does not fit the
// service producer's message.max.bytes; a null value (tombstone); an empty value; bytes that are
// not UTF-8; a JSON object with a string that is not UTF-8. Each slice goes in two halves: once
// the first is being committed, the second is produced and one instance is killed with SIGKILL
// at once, mid-processing, and started again (they take turns). At the end:
// - every input partition is committed to its end (committed offsets == end offsets);
// - the alerts topic, read_committed, equals `replay` of each input partition per idempotency
//   key: none missing, none twice, each the same JSON value apart from detected_at;
// - every rejected record is on the dead-letter topic exactly once (read_committed), as it came,
//   with its source topic, partition and offset; an oversized one is cut to fit and says so in
//   the headers `truncated: true` and `original-size: <bytes>`;
// - both instances are still running and answer /readyz with 200.
// Every wait has a deadline and the whole run a budget: a stall fails with the committed and end
// offsets and each instance's /readyz and /v1/partitions answers, never a hang.
//
// The short run (6 slices, 6 kills) is labelled `integration` (the test command); the soak (20
// slices and kills, the broker killed with SIGKILL and restarted once mid-slice) is labelled
// `soak` and needs FRAUD_TEST_KAFKA_DIR, the broker's `scripts/kafka --dir`: run it alone, as it
// restarts that broker under every other test.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <functional>
#include <random>
#include <set>

#include "tests/integration/service/live_service_fixture.h"
#include "tests/support/http_probe.h"
#include "tests/support/raw_producer.h"

namespace fraud::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Kafka's default message.max.bytes (broker) and max.message.bytes (topic): the largest record
// batch a topic accepts.
constexpr int kBrokerMaxMessageBytes = 1'048'588;
// librdkafka's default message.max.bytes, which `fraud-detector run` keeps unless --kafka sets
// it: the largest record (key + value + headers + framing) its producer sends.
constexpr size_t kServiceProducerMaxBytes = 1'000'000;
// The two oversized values: the one of issue 9 (just over the service producer's limit), and
// one just under what the broker takes (its batch framing included).
constexpr size_t kOversizedSmall = 1'000'100;
constexpr size_t kOversizedLarge = kBrokerMaxMessageBytes - 1024;

struct Produced {
  std::string key;
  std::optional<std::string> value;
  std::string kind;  // "valid", "malformed" (the stream's own) or the poison's name
  bool rejected = false;
};

struct KillLoopPlan {
  int slices = 6;
  int records_per_slice = 6'000;
  int broker_restart_after_slice = -1;  // -1: none
  std::chrono::seconds budget{300};     // the whole run
};

// The last `count` lines of `text`.
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

class PoisonKillLoopTest : public LiveServiceTest {
 protected:
  void SetUp() override {
    LiveServiceTest::SetUp();
    if (IsSkipped()) return;
    produced_.resize(kPartitions);
    // Large enough for the oversized values; below it the broker would refuse them, not us.
    raw_ = std::make_unique<RawProducer>(kafka_->brokers(), kBrokerMaxMessageBytes);
  }

  void TearDown() override {
    raw_.reset();
    LiveServiceTest::TearDown();
  }

  // The records of slice number `slice`: valid transactions with the poison records at random
  // places.
  std::vector<Produced> sliceRecords(const std::vector<TestRecord>& stream, size_t begin,
                                     size_t end, int slice) {
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

  void produceSlice(const std::vector<Produced>& records) {
    for (const auto& r : records) {
      const int32_t p = detectors::partitionCrc32(r.key, kPartitions);
      raw_->produce(input_, p, r.key,
                    r.value ? std::optional<std::string_view>(*r.value) : std::nullopt);
      produced_[static_cast<size_t>(p)].push_back(r);
    }
    raw_->flush();
  }

  void start(const std::string& name) {
    const uint16_t port = freeTcpPort();
    ports_[name] = port;
    current_[name] = &startInstance(name, {"--http-port", std::to_string(port)});
  }

  std::string url(const std::string& name, const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(ports_.at(name)) + path;
  }

  // Fails the test (not fatally) if the instance exited on its own, and starts it again.
  void expectRunning(const std::string& name) {
    ChildProcess& child = *current_.at(name);
    if (child.running()) return;
    ADD_FAILURE() << "instance " << name << " exited on its own with status "
                  << child.waitExit(seconds(0)).value_or(-1) << "; last log lines:\n"
                  << tail(child.stderrText(), 15);
    start(name);
  }

  void killAndRestart(const std::string& name) {
    expectRunning(name);
    ChildProcess& child = *current_.at(name);
    child.signal(SIGKILL);
    ASSERT_TRUE(child.waitExit(seconds(10)).has_value()) << name << " survived SIGKILL";
    start(name);
  }

  // Polls `condition` until it holds, `timeout` passes or the run's budget is spent.
  bool waitFor(const std::function<bool()>& condition, std::chrono::seconds timeout) {
    const auto until = std::min(Clock::now() + timeout, deadline_);
    while (true) {
      if (condition()) return true;
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  std::string describe() {
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
          << (child->running()
                  ? "running"
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

  // Whether every input partition's committed offset has reached its end offset; keeps both.
  bool caughtUp() {
    last_ends_ = kafka_->endOffsets(input_);
    last_committed_ = kafka_->committedOffsets(group_, input_);
    if (last_committed_.size() != last_ends_.size()) return false;
    for (size_t p = 0; p < last_ends_.size(); ++p) {
      if (last_committed_[p] < last_ends_[p]) return false;
    }
    return true;
  }

  // Runs scripts/kafka on the test command's broker; returns its exit status and output.
  std::pair<int, std::string> kafkaScript(const std::vector<std::string>& args) {
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

  void runKillLoop(const KillLoopPlan& plan) {
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
      const auto before = kafka_->endOffsets(input_);
      const auto begin = static_cast<size_t>(s) * static_cast<size_t>(plan.records_per_slice);
      const auto records =
          sliceRecords(stream, begin, begin + static_cast<size_t>(plan.records_per_slice), s);
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
        ADD_FAILURE() << "slice " << s << " (after " << kills
                      << " kills): no input partition committed any of its records within "
                      << (Clock::now() >= deadline_ ? "the run's budget" : "60 s") << "\n"
                      << describe();
        stalled = true;
        break;
      }
      // The second half, then the kills at once: they land while it is being processed.
      produceSlice({half, records.end()});
      ++produced_slices;
      if (s == plan.broker_restart_after_slice) {
        const auto killed = kafkaScript({"kill-broker", "1"});
        ASSERT_EQ(killed.first, 0) << killed.second;
        const auto restarted = kafkaScript({"start-broker", "1"});
        ASSERT_EQ(restarted.first, 0) << restarted.second;
        std::printf("slice %d: broker killed and restarted\n", s);
      }
      const std::string victim = s % 2 == 0 ? "a" : "b";
      expectRunning(victim == "a" ? "b" : "a");
      killAndRestart(victim);
      ++kills;
      std::printf("slice %d produced and %s killed at %.1f s\n", s, victim.c_str(),
                  std::chrono::duration<double>(Clock::now() - started).count());
    }

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

  // `replay` of each input partition (null and empty values become blank lines, which replay
  // skips: docs/rule.md §1). Also checks that replay rejects exactly the records this test calls
  // rejected, so the dead-letter expectations below are the contract's.
  AlertSet replayEachPartition() {
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

  void expectAlertsEqualReplay() {
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

  // `every_slice`: all slices were produced, so each kind of poison reached every partition.
  void expectEachRejectedRecordDeadLetteredOnce(bool every_slice) {
    std::map<std::pair<int32_t, int64_t>, int> seen;
    // Per kind of record: how many are wrong, and the first few of them.
    std::map<std::string, std::pair<int, std::string>> problems_by_kind;
    int problem_count = 0;
    auto problem = [&](const std::string& kind, const std::string& text) {
      auto& [count, examples] = problems_by_kind[kind];
      if (count++ < 3) examples += "  " + text + "\n";
      ++problem_count;
    };
    const auto dead = kafka_->readAll(dlq_);
    for (const auto& record : dead) {
      const auto header = [&](const std::string& name) {
        const auto it = record.headers.find(name);
        return it == record.headers.end() ? std::optional<std::string>() : it->second;
      };
      const auto partition = header("source-partition");
      const auto offset = header("source-offset");
      if (!partition || !offset) {
        problem("?", "a dead letter without source-partition/source-offset headers");
        continue;
      }
      const int32_t p = std::stoi(*partition);
      const int64_t o = std::stoll(*offset);
      const std::string where = std::to_string(p) + "/" + std::to_string(o);
      if (p < 0 || p >= kPartitions || o < 0 ||
          o >= static_cast<int64_t>(produced_[static_cast<size_t>(p)].size())) {
        problem("?", "a dead letter for " + where + ", which was never produced");
        continue;
      }
      const Produced& original = produced_[static_cast<size_t>(p)][static_cast<size_t>(o)];
      if (!original.rejected) {
        problem(original.kind, "a dead letter for " + where + ", a " + original.kind + " record");
        continue;
      }
      ++seen[{p, o}];
      if (header("source-topic") != input_) problem(original.kind, where + ": source-topic");
      if (header("reject-reason") != "invalid_json")
        problem(original.kind, where + " (" + original.kind + "): reject-reason " +
                                   header("reject-reason").value_or("(none)"));
      if (record.key != original.key) problem(original.kind, where + ": key differs");
      if (original.kind == "oversized") {
        size_t wire = record.key.value_or("").size() + record.value.value_or("").size();
        for (const auto& [name, value] : record.headers) wire += name.size() + value.size();
        const std::string& full = *original.value;
        if (header("truncated") != "true" ||
            header("original-size") != std::to_string(full.size()) || !record.value ||
            record.value->size() >= full.size() ||
            full.compare(0, record.value->size(), *record.value) != 0 ||
            wire > kServiceProducerMaxBytes) {
          problem(original.kind,
                  where + " (oversized, " + std::to_string(full.size()) +
                      " bytes): expected a prefix of at most " +
                      std::to_string(kServiceProducerMaxBytes) +
                      " bytes with headers, truncated: true, original-size; got " +
                      std::to_string(record.value.value_or("").size()) +
                      " bytes, truncated: " + header("truncated").value_or("(none)") +
                      ", original-size: " + header("original-size").value_or("(none)"));
        }
      } else {
        if (record.value != original.value)
          problem(original.kind, where + " (" + original.kind + "): value differs from the input");
        if (header("truncated").value_or("false") != "false")
          problem(original.kind, where + " (" + original.kind + "): marked truncated");
      }
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
        if (count == 0) problem(records[o].kind, where + " (" + records[o].kind + "): missing");
        if (count > 1)
          problem(records[o].kind,
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
      summary << " " << kind << " " << n << " (" << problems_by_kind[kind].first << " wrong)";
    }
    std::ostringstream examples;
    for (const auto& [kind, problems] : problems_by_kind) examples << problems.second;
    EXPECT_EQ(problem_count, 0) << "dead-letter topic (" << dead.size()
                                << " records, read_committed) vs the rejected input records:"
                                << summary.str() << "\n"
                                << examples.str();
  }

  std::unique_ptr<RawProducer> raw_;
  std::vector<std::vector<Produced>> produced_;   // per input partition, in offset order
  std::map<std::string, ChildProcess*> current_;  // the running process of each instance
  std::map<std::string, uint16_t> ports_;
  Clock::time_point deadline_;
  std::vector<int64_t> last_ends_, last_committed_;  // as caughtUp() last saw them
  std::string kafka_dir_;
};

TEST_F(PoisonKillLoopTest, PoisonRecordsAndAKillAfterEverySliceStallNothingLoseNothing) {
  runKillLoop(KillLoopPlan{});
}

TEST_F(PoisonKillLoopTest, SoakTwentyKillsOfBothInstancesAndABrokerRestart) {
  const char* dir = std::getenv("FRAUD_TEST_KAFKA_DIR");
  ASSERT_TRUE(dir != nullptr && *dir != '\0')
      << "the soak restarts the broker: set FRAUD_TEST_KAFKA_DIR to its scripts/kafka --dir";
  kafka_dir_ = dir;
  KillLoopPlan plan;
  plan.slices = 20;
  plan.records_per_slice = 3'000;
  plan.broker_restart_after_slice = 9;
  plan.budget = seconds(1'200);
  runKillLoop(plan);
}

}  // namespace
}  // namespace fraud::testing
