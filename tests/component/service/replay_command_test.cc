// `fraud-detector replay` as a user runs it: the binary, files, stdin, exit statuses.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace fraud::testing {
namespace {

using std::chrono::seconds;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string lastLine(const std::string& text) {
  auto end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

struct ReplayRun {
  int status;
  std::string out;
  std::string err;
};

const std::map<std::string, std::string> kKeyEnv = {
    {"FRAUD_CARD_HASH_KEY", "cli-test-card-hash-key-of-32-bytes"}};

constexpr const char* kAlertingInput =
    "{\"tx_id\":\"a\",\"card\":\"card-1\",\"country\":\"DE\",\"event_time\":1}\n"
    "{\"tx_id\":\"b\",\"card\":\"card-1\",\"country\":\"FR\",\"event_time\":2}\n"
    "{\"tx_id\":\"c\",\"card\":\"card-1\",\"country\":\"IT\",\"event_time\":3}\n";

// Every file of a test in a directory of its own, removed at the end.
class ReplayCommand : public ::testing::Test {
 protected:
  std::string tempPath(const std::string& name) const { return dir_.file(name); }
  std::string writeFile(const std::string& name, const std::string& content) const {
    return dir_.write(name, content);
  }
  ReplayRun replay(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env,
                   const std::string& stdin_path = "/dev/null") const {
    std::vector<std::string> all = {"replay"};
    all.insert(all.end(), args.begin(), args.end());
    ChildProcess process(FRAUD_DETECTOR_BIN, all, env, tempPath("replay-run"), stdin_path);
    const auto status = process.waitExit(seconds(60));
    return {status.value_or(-1), process.stdoutText(), process.stderrText()};
  }

  TempDir dir_;
};

TEST_F(ReplayCommand, WritesAlertsAndEndsStderrWithTheSummary) {
  const auto input =
      writeFile("three.jsonl",
                "{\"tx_id\":\"a\",\"card\":\"card-1\",\"country\":\"DE\",\"event_time\":1000}\n"
                "  \t\r\n"
                "\n"
                "{\"tx_id\":\"b\",\"card\":\"card-1\",\"country\":\"FR\",\"event_time\":2000}\r\n"
                "not json\n"
                "{\"tx_id\":\"c\",\"card\":\"card-1\",\"country\":\"IT\",\"event_time\":\"1970-01-"
                "01T00:00:03Z\"}");
  const auto run = replay({"--input", input}, kKeyEnv);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto alert = nlohmann::json::parse(run.out);
  EXPECT_EQ(alert["tx_ids"], nlohmann::json({"a", "b", "c"}));
  EXPECT_EQ(alert["window_start"], 1000);
  const auto summary = nlohmann::json::parse(lastLine(run.err));
  EXPECT_EQ(summary,
            nlohmann::json::parse(R"({"records":4,"accepted":3,"late_dropped":0,"duplicate":0,)"
                                  R"("overflow_evicted":0,"alerts":1,"incidents":1,)"
                                  R"("rejected":{"invalid_json":1}})"));
}

TEST_F(ReplayCommand, ReadsStdinAndWritesAnOutputFile) {
  const auto input =
      writeFile("stdin.jsonl",
                "{\"tx_id\":\"a\",\"card\":\"card-1\",\"country\":\"DE\",\"event_time\":1}\n"
                "{\"tx_id\":\"b\",\"card\":\"card-1\",\"country\":\"FR\",\"event_time\":2}\n"
                "{\"tx_id\":\"c\",\"card\":\"card-1\",\"country\":\"IT\",\"event_time\":3}");
  const auto output = tempPath("out.jsonl");
  const auto run = replay({"--input", "-", "--output", output}, kKeyEnv, input);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(nlohmann::json::parse(readFile(output))["trigger_tx_id"], "c");
}

TEST_F(ReplayCommand, DetectorFlagsChangeTheRule) {
  const auto input =
      writeFile("two.jsonl",
                "{\"tx_id\":\"a\",\"card\":\"card-1\",\"country\":\"DE\",\"event_time\":1000}\n"
                "{\"tx_id\":\"b\",\"card\":\"card-1\",\"country\":\"FR\",\"event_time\":1500}\n");
  auto run = replay({"--input", input}, kKeyEnv);
  EXPECT_EQ(run.out, "");
  run = replay({"--input", input, "--threshold", "2", "--window-ms", "500"}, kKeyEnv);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto alert = nlohmann::json::parse(run.out);
  EXPECT_EQ(alert["threshold"], 2);
  EXPECT_EQ(alert["window_ms"], 500);
}

TEST_F(ReplayCommand, KeyFileWinsOverEnvironment) {
  const auto input = writeFile(
      "key.jsonl", "{\"tx_id\":\"a\",\"card\":\"card-1\",\"country\":\"DE\",\"event_time\":1}\n");
  const std::string file_key = "file-card-hash-key-of-32-bytes-or-more";
  const auto key_file = writeFile("key.txt", file_key + "\n");
  const auto with_env = replay({"--input", input, "--threshold", "1", "--max-events", "1"},
                               {{"FRAUD_CARD_HASH_KEY", file_key}});
  const auto with_file = replay(
      {"--input", input, "--threshold", "1", "--max-events", "1", "--card-hash-key-file", key_file},
      {{"FRAUD_CARD_HASH_KEY", "other-card-hash-key-of-32-bytes-or-more"}});
  ASSERT_EQ(with_env.status, 0);
  ASSERT_EQ(with_file.status, 0);
  EXPECT_EQ(nlohmann::json::parse(with_env.out)["card_ref"],
            nlohmann::json::parse(with_file.out)["card_ref"]);
}

// A script reads the last line of stderr as the summary: a run that could not read its input
// must not end with one ("0 records, fine"), only with the error.
TEST_F(ReplayCommand, AMissingInputEndsWithTheErrorAndNoSummary) {
  const auto run = replay({"--input", "/nonexistent/input.jsonl"}, kKeyEnv);
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err,
            "replay: cannot open input /nonexistent/input.jsonl: No such file or directory\n");
  EXPECT_EQ(run.out, "");
}

// --rejects: where each rejected line is (its number, counting every line from 1), why, and its
// bytes (base64 when they are not UTF-8, so that the file stays JSON). The bytes are the
// input's own, clear card numbers included; they go to that file alone, never to stderr.
TEST_F(ReplayCommand, RejectsFileLocatesEachRejectedLine) {
  const auto input =
      writeFile("rejects.jsonl",
                "{\"tx_id\":\"a\",\"card\":\"card-1\",\"country\":\"DE\",\"event_time\":1}\n"
                "\n"
                "not json\n"
                "{\"tx_id\":\"b\",\"card\":\"4111111111111111\",\"country\":\"FR\"}\r\n"
                "{\"tx_id\":\"c\",\"card\":\"card-1\",\"country\":\"D\",\"event_time\":2}\n"
                "\xff\xfe\t\n"
                "{\"tx_id\":\"d\",\"card\":\"card-1\",\"country\":\"IT\",\"event_time\":3}\n"
                "{\"tx_id\":\"e\",\"card\":\"card-1\",\"country\":\"\xc3\x89S\",\"event_time\":4}\n"
                "{\"tx_id\":");
  const auto rejects = tempPath("rejects.out.jsonl");
  const auto run = replay({"--input", input, "--rejects", rejects}, kKeyEnv);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto summary = nlohmann::json::parse(lastLine(run.err));
  EXPECT_EQ(summary["records"], 8);
  EXPECT_EQ(summary["rejected"],
            nlohmann::json::parse(R"({"invalid_json":3,"missing_field":1,"invalid_field":2})"));
  EXPECT_EQ(run.err.find("4111111111111111"), std::string::npos) << run.err;

  std::istringstream lines(readFile(rejects));
  std::vector<nlohmann::json> got;
  for (std::string line; std::getline(lines, line);) got.push_back(nlohmann::json::parse(line));
  const std::vector<nlohmann::json> expected = {
      {{"line", 3}, {"reason", "invalid_json"}, {"bytes", "not json"}},
      {{"line", 4},
       {"reason", "missing_field"},
       {"bytes", "{\"tx_id\":\"b\",\"card\":\"4111111111111111\",\"country\":\"FR\"}\r"}},
      {{"line", 5},
       {"reason", "invalid_field"},
       {"bytes", R"({"tx_id":"c","card":"card-1","country":"D","event_time":2})"}},
      {{"line", 6}, {"reason", "invalid_json"}, {"bytes_base64", "//4J"}},
      {{"line", 8},
       {"reason", "invalid_field"},
       {"bytes",
        "{\"tx_id\":\"e\",\"card\":\"card-1\",\"country\":\"\xc3\x89S\",\"event_time\":4}"}},
      {{"line", 9}, {"reason", "invalid_json"}, {"bytes", "{\"tx_id\":"}}};
  EXPECT_EQ(got, expected) << readFile(rejects);
  // It holds what the input holds (card numbers): readable by its owner alone.
  struct stat info {};
  ASSERT_EQ(::stat(rejects.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST_F(ReplayCommand, RejectsFileThatIsTheInputOrTheOutputIsRefused) {
  const auto input = writeFile("in.jsonl", kAlertingInput);
  auto run = replay({"--input", input, "--rejects", input}, kKeyEnv);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--rejects " + input + " is the input"), std::string::npos) << run.err;
  EXPECT_EQ(readFile(input), kAlertingInput);

  const auto output = writeFile("out.jsonl", "");
  run = replay({"--input", input, "--output", output, "--rejects", output}, kKeyEnv);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--rejects " + output + " is the output"), std::string::npos) << run.err;
}

TEST_F(ReplayCommand, HelpSaysWhatTheRejectsFileHolds) {
  const auto run = replay({"--help"}, kKeyEnv);
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.out.find("--rejects"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("the input's own bytes"), std::string::npos) << run.out;
}

TEST_F(ReplayCommand, RefusesMissingKeyBadFlagsAndUnreadableInput) {
  auto run = replay({"--input", writeFile("any.jsonl", "")}, {{"FRAUD_CARD_HASH_KEY", ""}});
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.err.find("empty"), std::string::npos) << run.err;

  run = replay({"--input", "/nonexistent/input.jsonl"}, kKeyEnv);
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.err.find("/nonexistent/input.jsonl"), std::string::npos) << run.err;

  run = replay({"--input", writeFile("any2.jsonl", ""), "--threshold", "0", "--window-ms", "0"},
               kKeyEnv);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("replay: --threshold must be at least 1, got 0\n"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("replay: --window-ms must be in 1.."), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("window_ms"), std::string::npos) << run.err;

  run = replay({"--bogus"}, kKeyEnv);
  EXPECT_EQ(run.status, 2);
}

// Issue 10: a short key lets a lookup's card -> card_ref pairs be brute-forced.
TEST_F(ReplayCommand, RefusesAKeyShorterThan32BytesSayingHowToMakeOne) {
  const auto run =
      replay({"--input", writeFile("any.jsonl", "")}, {{"FRAUD_CARD_HASH_KEY", "short-key"}});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("at least 32"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("openssl rand -hex 32"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("short-key"), std::string::npos) << "the key itself was printed";
}

// Opening the output with O_TRUNC would empty the input before a byte of it is read.
TEST_F(ReplayCommand, RefusesToWriteAlertsOverItsInput) {
  const auto input = writeFile("same.jsonl", kAlertingInput);
  auto run = replay({"--input", input, "--output", input}, kKeyEnv);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("is the input"), std::string::npos) << run.err;
  EXPECT_EQ(readFile(input), kAlertingInput);

  // The same file under another name: a symbolic link, a hard link, a path with "..".
  const auto symlink = tempPath("symlink.jsonl");
  std::filesystem::create_symlink(input, symlink);
  const auto hardlink = tempPath("hardlink.jsonl");
  std::filesystem::create_hard_link(input, hardlink);
  const auto dotted = (dir_.path() / ".." / dir_.path().filename() / "same.jsonl").string();
  for (const auto& output : {symlink, hardlink, dotted}) {
    run = replay({"--input", input, "--output", output}, kKeyEnv);
    EXPECT_EQ(run.status, 2) << output;
    EXPECT_NE(run.err.find("is the input"), std::string::npos) << output << ": " << run.err;
    EXPECT_EQ(readFile(input), kAlertingInput) << output;
  }
  // Input on stdin, output the file stdin reads.
  run = replay({"--input", "-", "--output", input}, kKeyEnv, input);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(readFile(input), kAlertingInput);
}

TEST_F(ReplayCommand, AnOutputThatIsADifferentFileIsStillWritten) {
  const auto input = writeFile("in.jsonl", kAlertingInput);
  const auto output = writeFile("out.jsonl", "old content\n");
  const auto run = replay({"--input", input, "--output", output}, kKeyEnv);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(readFile(output))["trigger_tx_id"], "c");
  EXPECT_EQ(readFile(input), kAlertingInput);
}

// Card controls (docs/rule.md "Card controls"): a card's suppress diverts the alerts it covers
// (from inclusive, until exclusive, by trigger event time) to the suppressed output, the same
// JSON; the incident goes on counting revisions through it. Bad lines are counted, never fatal.
constexpr const char* kControlledInput =
    "{\"tx_id\":\"a\",\"card\":\"card-1\",\"country\":\"DE\",\"event_time\":1000}\n"
    "{\"tx_id\":\"b\",\"card\":\"card-1\",\"country\":\"FR\",\"event_time\":1100}\n"
    "{\"tx_id\":\"e\",\"card\":\"card-2\",\"country\":\"DE\",\"event_time\":1100}\n"
    "{\"tx_id\":\"f\",\"card\":\"card-2\",\"country\":\"FR\",\"event_time\":1150}\n"
    "{\"tx_id\":\"c\",\"card\":\"card-1\",\"country\":\"IT\",\"event_time\":1200}\n"
    "{\"tx_id\":\"d\",\"card\":\"card-1\",\"country\":\"ES\",\"event_time\":1300}\n";

std::vector<nlohmann::json> alertsOf(const std::string& text) {
  std::vector<nlohmann::json> alerts;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto alert = nlohmann::json::parse(line);
    alert.erase("detected_at");
    alerts.push_back(alert);
  }
  return alerts;
}

TEST_F(ReplayCommand, ControlsSuppressAlertsIntoTheSuppressedOutput) {
  const auto input = writeFile("controlled.jsonl", kControlledInput);
  const auto controls = writeFile(
      "controls.jsonl",
      "{\"card\":\"card-2\",\"action\":\"suppress\",\"until\":5000,\"reason\":\"r\",\"author\":"
      "\"a\"}\n"
      "{\"card\":\"card-1\",\"action\":\"suppress\",\"from\":\"1970-01-01T00:00:01.100Z\","
      "\"until\":1300,\"reason\":\"travel notice\",\"author\":\"analyst-7\",\"ticket\":12}\n"
      " \t\r\n"
      "not json\n"
      "{\"card\":\"card-2\",\"action\":\"suppress\",\"reason\":\"r\",\"author\":\"a\"}\n"
      "{\"card\":\"card-2\",\"action\":\"remove\",\"reason\":\"cleared\",\"author\":\"a\"}\n"
      "{\"card\":\"card-3\",\"action\":\"remove\",\"reason\":\"cleared\",\"author\":\"a\"}");
  const auto output = tempPath("alerts.jsonl");
  const auto suppressed = tempPath("suppressed.jsonl");
  const std::vector<std::string> rule = {"--threshold", "2", "--window-ms", "1000"};
  std::vector<std::string> args = {
      "--input", input, "--output", output, "--controls", controls, "--suppressed-output",
      suppressed};
  args.insert(args.end(), rule.begin(), rule.end());
  const auto run = replay(args, kKeyEnv);
  ASSERT_EQ(run.status, 0) << run.err;

  std::vector<std::string> plain_args = {"--input", input};
  plain_args.insert(plain_args.end(), rule.begin(), rule.end());
  const auto plain = replay(plain_args, kKeyEnv);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto all = alertsOf(plain.out);
  ASSERT_EQ(all.size(), 4u) << plain.out;
  ASSERT_EQ(all[0]["trigger_tx_id"], "b");
  ASSERT_EQ(all[1]["trigger_tx_id"], "f");
  ASSERT_EQ(all[2]["trigger_tx_id"], "c");
  ASSERT_EQ(all[3]["trigger_tx_id"], "d");

  // card-1's first two alerts (trigger times 1100 and 1200) are in [1100, 1300); its third
  // (1300) is not, and carries revision 3: the incident went on through the suppression.
  // card-2's suppress was removed by a later line.
  EXPECT_EQ(alertsOf(readFile(suppressed)), (std::vector<nlohmann::json>{all[0], all[2]}));
  EXPECT_EQ(alertsOf(readFile(output)), (std::vector<nlohmann::json>{all[1], all[3]}));
  EXPECT_EQ(all[3]["revision"], 3);

  const auto summary = nlohmann::json::parse(lastLine(run.err));
  EXPECT_EQ(summary,
            nlohmann::json::parse(R"({"records":6,"accepted":6,"late_dropped":0,"duplicate":0,)"
                                  R"("overflow_evicted":0,"alerts":4,"incidents":2,"rejected":{},)"
                                  R"("suppressed":2,"controls":{"applied":4,)"
                                  R"("rejected":{"invalid_json":1,"missing_field":1}}})"));
  // Without --controls the summary has neither key.
  const auto plain_summary = nlohmann::json::parse(lastLine(plain.err));
  EXPECT_FALSE(plain_summary.contains("suppressed"));
  EXPECT_FALSE(plain_summary.contains("controls"));
}

TEST_F(ReplayCommand, AnEmptyControlsFileSuppressesNothing) {
  const auto input = writeFile("in.jsonl", kAlertingInput);
  const auto controls = writeFile("controls.jsonl", "");
  const auto suppressed = tempPath("suppressed.jsonl");
  const auto run = replay(
      {"--input", input, "--controls", controls, "--suppressed-output", suppressed}, kKeyEnv);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["trigger_tx_id"], "c");
  EXPECT_EQ(readFile(suppressed), "");
  const auto summary = nlohmann::json::parse(lastLine(run.err));
  EXPECT_EQ(summary["suppressed"], 0);
  EXPECT_EQ(summary["controls"], nlohmann::json::parse(R"({"applied":0,"rejected":{}})"));
}

TEST_F(ReplayCommand, ControlsFlagsAreRefusedAloneOrOverAnotherFile) {
  const auto input = writeFile("in.jsonl", kAlertingInput);
  const std::string controls_text =
      "{\"card\":\"card-1\",\"action\":\"suppress\",\"until\":9,\"reason\":\"r\",\"author\":\"a\"}"
      "\n";
  const auto controls = writeFile("controls.jsonl", controls_text);
  const auto suppressed = tempPath("suppressed.jsonl");
  const auto output = writeFile("out.jsonl", "old\n");

  auto run = replay({"--input", input, "--controls", controls}, kKeyEnv);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--controls needs --suppressed-output"), std::string::npos) << run.err;
  run = replay({"--input", input, "--suppressed-output", suppressed}, kKeyEnv);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--suppressed-output needs --controls"), std::string::npos) << run.err;
  run = replay({"--input", input, "--controls", "-", "--suppressed-output", suppressed}, kKeyEnv);
  EXPECT_EQ(run.status, 2);
  run = replay({"--input", input, "--controls", controls, "--suppressed-output", "-"}, kKeyEnv);
  EXPECT_EQ(run.status, 2);

  const auto refused = [&](const std::vector<std::string>& args, const std::string& message) {
    const auto refusal = replay(args, kKeyEnv);
    EXPECT_EQ(refusal.status, 2) << refusal.err;
    EXPECT_NE(refusal.err.find(message), std::string::npos) << refusal.err;
    EXPECT_EQ(readFile(input), kAlertingInput);
    EXPECT_EQ(readFile(controls), controls_text);
    EXPECT_EQ(readFile(output), "old\n");
  };
  refused({"--input", input, "--output", controls, "--controls", controls, "--suppressed-output",
           suppressed},
          "--output " + controls + " is the controls file");
  refused({"--input", input, "--rejects", controls, "--controls", controls, "--suppressed-output",
           suppressed},
          "--rejects " + controls + " is the controls file");
  refused({"--input", input, "--controls", controls, "--suppressed-output", controls},
          "--suppressed-output " + controls + " is the controls file");
  refused({"--input", input, "--controls", controls, "--suppressed-output", input},
          "--suppressed-output " + input + " is the input");
  refused(
      {"--input", input, "--output", output, "--controls", controls, "--suppressed-output", output},
      "--suppressed-output " + output + " is the output");
  const auto rejects = writeFile("rejects.jsonl", "");
  refused({"--input", input, "--output", output, "--rejects", rejects, "--controls", controls,
           "--suppressed-output", rejects},
          "--suppressed-output " + rejects + " is the rejects file");

  // A controls file that cannot be read: the error alone, and no output opened.
  run = replay({"--input", input, "--output", output, "--controls", "/nonexistent/controls.jsonl",
                "--suppressed-output", suppressed},
               kKeyEnv);
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err,
            "replay: cannot open controls file /nonexistent/controls.jsonl: No such file or "
            "directory\n");
  EXPECT_EQ(readFile(output), "old\n");
  EXPECT_FALSE(std::filesystem::exists(suppressed));
}

TEST_F(ReplayCommand, HelpNamesTheControlsFlags) {
  const auto run = replay({"--help"}, kKeyEnv);
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.out.find("--controls"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--suppressed-output"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace fraud::testing
