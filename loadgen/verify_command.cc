#include "loadgen/verify_command.h"

#include <vector>

#include "detectors/card_ref.h"
#include "service/cli/detector_flags.h"

namespace fraud::loadgen {

using fraud::cli::addDetectorFlags;

CLI::App* addVerifyCommand(CLI::App& app, VerifyFlags& f) {
  auto& verify = f.verify;
  auto* cmd = app.add_subcommand(
      "verify",
      "Audit: run the detection engine offline over every partition of --topic (read_committed) "
      "and compare with --alerts-topic by idempotency key (every field but detected_at: "
      "missing, unexpected, differing, duplicated), check the rejected records are on "
      "--dlq-topic, and that every scenario of --truth was alerted. Prints a JSON report; exits "
      "0 on pass, 1 on any mismatch, 2 on a usage or connection error.");
  cmd->add_option("--brokers", verify.brokers, "Kafka bootstrap servers")->envname("FRAUD_BROKERS");
  cmd->add_option("--topic", verify.topic, "Input topic")->capture_default_str();
  cmd->add_option("--alerts-topic", verify.alerts_topic, "Alerts topic")->capture_default_str();
  cmd->add_option("--dlq-topic", verify.dlq_topic, "Dead-letter topic")->capture_default_str();
  cmd->add_option("--truth", verify.truth_path, "Truth file of `fraud-loadgen --truth`");
  cmd->add_option("--group", verify.group,
                  "The service's consumer group, whose commits say it has caught up")
      ->capture_default_str();
  cmd->add_option("--card-hash-key-file", f.key_file,
                  "File holding the card-hash key; wins over FRAUD_CARD_HASH_KEY");
  addDetectorFlags(*cmd, verify.detector);
  cmd->add_option("--max-future-skew-ms", verify.max_future_skew_ms,
                  "The service's future_event_time skew")
      ->capture_default_str();
  cmd->add_option("--wait-seconds", verify.wait_seconds,
                  "Wait this long for the group's committed offsets to reach the input's "
                  "last records; 0 skips the wait")
      ->capture_default_str();
  cmd->add_option("--stall-seconds", verify.stall_seconds,
                  "Fail a topic read that gets no record for this long short of its end")
      ->capture_default_str();
  cmd->add_option("--list-limit", verify.list_limit, "Entries per list in the report")
      ->capture_default_str();
  cmd->add_option("--alert-delivery", verify.alert_delivery,
                  "The service's --alert-delivery: transactional (each alert exactly once) or "
                  "immediate (an idempotency key may repeat, only as an exact repeat; the "
                  "report counts the repeats)")
      ->check(CLI::IsMember({"transactional", "immediate"}))
      ->capture_default_str();
  addKafkaFlags(*cmd, f.kafka);
  return cmd;
}

int runVerifyCommand(VerifyFlags& f) {
  std::vector<std::string> problems = f.verify.validate();
  parseKafkaProperties(f.kafka, f.verify.kafka_properties, problems);
  const auto key = loadKey(f.key_file, /*required=*/true, problems);
  if (!problems.empty()) return reportProblems("fraud-loadgen verify", problems);
  const detectors::CardHasher hasher(key->bytes);
  return runVerify(f.verify, hasher);
}

}  // namespace fraud::loadgen
