#include "loadgen/truth_file.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace fraud::loadgen {

std::string truthLine(const TruthScenario& scenario) {
  nlohmann::ordered_json line;
  line["scenario"] = scenario.scenario;
  line["card_ref"] = scenario.card_ref;
  line["partition"] = scenario.partition;
  line["countries"] = scenario.countries;
  line["event_times"] = scenario.event_times;
  line["tx_ids"] = scenario.tx_ids;
  return line.dump();
}

base::Result<std::vector<TruthScenario>> readTruthFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return base::Status::ioError("cannot read truth file " + path);
  std::vector<TruthScenario> scenarios;
  std::string text;
  size_t line_number = 0;
  while (std::getline(in, text)) {
    ++line_number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const auto line = nlohmann::json::parse(text);
      TruthScenario s;
      s.scenario = line.at("scenario").get<uint64_t>();
      s.card_ref = line.at("card_ref").get<std::string>();
      s.partition = line.at("partition").get<int32_t>();
      s.countries = line.at("countries").get<std::vector<std::string>>();
      s.event_times = line.at("event_times").get<std::vector<detectors::EventTime>>();
      s.tx_ids = line.at("tx_ids").get<std::vector<std::string>>();
      scenarios.push_back(std::move(s));
    } catch (const nlohmann::json::exception& e) {
      return base::Status::failed(path + ":" + std::to_string(line_number) +
                                  ": not a truth scenario: " + e.what());
    }
  }
  if (in.bad()) return base::Status::ioError("cannot read truth file " + path);
  return scenarios;
}

bool isRecalled(const TruthScenario& scenario, const std::vector<AlertWindow>& alerts_of_card) {
  for (const auto& alert : alerts_of_card) {
    if (alert.card_ref != scenario.card_ref) continue;
    for (const detectors::EventTime t : scenario.event_times) {
      if (alert.window_start <= t && t <= alert.window_end) return true;
    }
  }
  return false;
}

}  // namespace fraud::loadgen
