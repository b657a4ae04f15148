#pragma once

// What fraud-loadgen's commands share on the command line (main.cc): number and duration texts,
// the librdkafka properties, the card-hash key, and how problems are reported. The executable's
// only (CLI11).

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "service/kafka/client.h"
#include "service/kafka/secret.h"

namespace fraud::loadgen {

// The whole text as a number; nothing otherwise.
[[nodiscard]] std::optional<double> parseNumber(const std::string& text);

// "120000", "250ms", "30s", "2m", "1h": a duration in milliseconds; a bare number is in
// `bare_unit_ms` units. Nothing for anything else.
[[nodiscard]] std::optional<double> parseDurationMs(const std::string& text, double bare_unit_ms);

// The librdkafka properties given by --kafka-config (a file, so SASL secrets can be mounted)
// and the --kafka flags, which win.
struct KafkaFlags {
  std::optional<std::string> config_file;
  std::vector<std::string> properties;
};

void addKafkaFlags(CLI::App& cmd, KafkaFlags& flags);

// Fills `out`; false when a problem was added to `problems`.
bool parseKafkaProperties(const KafkaFlags& flags, kafka::KafkaProperties& out,
                          std::vector<std::string>& problems);

// Loads the key; a given but unusable source is a problem, an absent one only when `required`.
[[nodiscard]] std::optional<kafka::Secret> loadKey(const std::optional<std::string>& key_file,
                                                   bool required,
                                                   std::vector<std::string>& problems);

// Each problem on stderr as "PREFIX: problem"; returns 2, the exit status of a usage error.
int reportProblems(const char* prefix, const std::vector<std::string>& problems);

}  // namespace fraud::loadgen
