#include "loadgen/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "loadgen/report_page.h"
#include "service/kafka/wall_clock.h"

namespace fraud::loadgen {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kDataOpen = "<script type=\"application/json\" id=\"report-data\">";
constexpr std::string_view kDataClose = "</script>";

}  // namespace

std::string embeddedData(const ordered_json& data) {
  const std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out(kDataOpen);
  out.reserve(json.size() + 128);
  // "<", ">" and "&" only occur inside JSON strings, where their \u escapes mean the same.
  for (const char c : json) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  out += kDataClose;
  return out;
}

std::optional<ordered_json> reportDataOf(std::string_view html, std::string& error) {
  const auto open = html.find(kDataOpen);
  if (open == std::string_view::npos) {
    error = "it holds no fraud-loadgen report data";
    return std::nullopt;
  }
  const auto begin = open + kDataOpen.size();
  const auto close = html.find(kDataClose, begin);
  if (close == std::string_view::npos) {
    error = "its report data is not closed";
    return std::nullopt;
  }
  auto data = ordered_json::parse(html.substr(begin, close - begin), nullptr,
                                  /*allow_exceptions=*/false);
  if (data.is_discarded() || !data.is_object()) {
    error = "its report data is not a JSON object";
    return std::nullopt;
  }
  if (!data.contains("format") || data["format"] != std::string(kReportFormat)) {
    error = "its report data is not of format " + std::string(kReportFormat);
    return std::nullopt;
  }
  return data;
}

std::optional<std::string> readReportFile(const std::string& path, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return std::nullopt;
  if (std::filesystem::is_directory(path, ec)) {
    error = path + " is a directory";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxReportBytes) {
      error = path + " is larger than " + std::to_string(kMaxReportBytes) + " bytes";
      return std::nullopt;
    }
  }
  if (in.bad()) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  return text;
}

bool writeReportFile(const std::string& path, const std::string& html, std::string& error) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << html;
    out.flush();
    if (!out) {
      error = "cannot write " + temporary;
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + temporary + " to " + path + ": " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

bool writeRunReport(const std::string& path, const ProductionOptions& options,
                    const RunSeries& series, std::string& error) {
  std::vector<TruthScenario> scenarios;
  if (!options.truth_path.empty()) {
    auto truth = readTruthFile(options.truth_path, error);
    if (!truth) return false;
    scenarios = std::move(*truth);
  }
  const auto data = reportData(series, reportParameters(options), scenarios, kafka::wallClockMs());
  return writeReportFile(path, renderReport(data), error);
}

bool addVerifyToReportFile(const std::string& path, const std::string& verify_path,
                           std::string& error) {
  auto existing = readReportFile(path, error);
  if (!error.empty()) return false;
  ordered_json data;
  if (existing) {
    std::string why;
    auto parsed = reportDataOf(*existing, why);
    if (!parsed) {
      error = path + " is not a fraud-loadgen report (" + why + "); not overwritten";
      return false;
    }
    data = std::move(*parsed);
  } else {
    data = emptyReportData(kafka::wallClockMs());
  }

  std::string verify_text;
  if (verify_path == "-") {
    char buffer[1 << 16];
    while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
      verify_text.append(buffer, static_cast<size_t>(std::cin.gcount()));
      if (verify_text.size() > kMaxReportBytes) break;
    }
  } else {
    auto text = readReportFile(verify_path, error);
    if (!error.empty()) return false;
    if (!text) {
      error = "cannot read " + verify_path + ": no such file";
      return false;
    }
    verify_text = std::move(*text);
  }
  if (verify_text.size() > kMaxReportBytes) {
    error = "verify's report is larger than " + std::to_string(kMaxReportBytes) + " bytes";
    return false;
  }
  const auto verify = ordered_json::parse(verify_text, nullptr, /*allow_exceptions=*/false);
  if (verify.is_discarded()) {
    error = (verify_path == "-" ? std::string("stdin") : verify_path) +
            " is not JSON (the stdout of `fraud-loadgen verify`)";
    return false;
  }
  if (!addVerifyResult(data, verify, kafka::wallClockMs(), error)) return false;
  return writeReportFile(path, renderReport(data), error);
}

}  // namespace fraud::loadgen
