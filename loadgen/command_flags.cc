#include "loadgen/command_flags.h"

#include <charconv>
#include <cstdio>
#include <string_view>
#include <system_error>

#include "service/cli/detector_flags.h"
#include "service/kafka/properties.h"

namespace fraud::loadgen {

std::optional<double> parseNumber(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

std::optional<double> parseDurationMs(const std::string& text, double bare_unit_ms) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data() || value < 0) return std::nullopt;
  const std::string_view unit(ptr, static_cast<size_t>(end - ptr));
  if (unit.empty()) return value * bare_unit_ms;
  if (unit == "ms") return value;
  if (unit == "s") return value * 1e3;
  if (unit == "m") return value * 60e3;
  if (unit == "h") return value * 3600e3;
  return std::nullopt;
}

void addKafkaFlags(CLI::App& cmd, KafkaFlags& flags) {
  cmd.add_option(
         "--kafka-config", flags.config_file,
         "A properties file of librdkafka settings (e.g. SASL/TLS): key=value or key: value "
         "lines, # and ! comments (Java properties syntax)")
      ->envname("FRAUD_KAFKA_CONFIG");
  cmd.add_option("--kafka", flags.properties,
                 "A librdkafka property KEY=VALUE for every client (repeatable; TLS, SASL, "
                 "tuning; wins over --kafka-config)");
}

bool parseKafkaProperties(const KafkaFlags& flags, kafka::KafkaProperties& out,
                          std::vector<std::string>& problems) {
  const size_t before = problems.size();
  if (flags.config_file) {
    auto file = kafka::readPropertiesFile(*flags.config_file);
    for (auto& problem : file.problems) problems.push_back("--kafka-config: " + problem);
    out = std::move(file.properties);
  }
  for (const auto& text : flags.properties) {
    const auto property = kafka::parseProperty(text);
    if (!property) {
      problems.push_back("--kafka expects KEY=VALUE, not '" + text + "'");
      continue;
    }
    out[property->first] = property->second;
  }
  return problems.size() == before;
}

std::optional<kafka::Secret> loadKey(const std::optional<std::string>& key_file, bool required,
                                     std::vector<std::string>& problems) {
  if (!required && kafka::cardHashKeyAbsent(key_file)) return std::nullopt;
  auto key = kafka::loadCardHashKey(key_file);
  if (!key) {
    problems.push_back(key.message());
    return std::nullopt;
  }
  return std::move(*key);
}

int reportProblems(const char* prefix, const std::vector<std::string>& problems) {
  // The rule's bounds come from DetectorOptions::validate(), which names fields, not flags.
  for (const auto& problem : problems) {
    std::fprintf(stderr, "%s: %s\n", prefix, cli::withDetectorFlagNames(problem).c_str());
  }
  return 2;
}

}  // namespace fraud::loadgen
