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

base::Result<ordered_json> reportDataOf(std::string_view html) {
  const auto open = html.find(kDataOpen);
  if (open == std::string_view::npos) {
    return base::Status::failed("it holds no fraud-loadgen report data");
  }
  const auto begin = open + kDataOpen.size();
  const auto close = html.find(kDataClose, begin);
  if (close == std::string_view::npos) return base::Status::failed("its report data is not closed");
  auto data = ordered_json::parse(html.substr(begin, close - begin), nullptr,
                                  /*allow_exceptions=*/false);
  if (data.is_discarded() || !data.is_object()) {
    return base::Status::failed("its report data is not a JSON object");
  }
  if (!data.contains("format") || data["format"] != std::string(kReportFormat)) {
    return base::Status::failed("its report data is not of format " + std::string(kReportFormat));
  }
  return data;
}

base::Result<std::optional<std::string>> readReportFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return std::optional<std::string>();
  if (std::filesystem::is_directory(path, ec)) {
    return base::Status::failed(path + " is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return base::Status::ioError("cannot read " + path + ": " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxReportBytes) {
      return base::Status::failed(path + " is larger than " + std::to_string(kMaxReportBytes) +
                                  " bytes");
    }
  }
  if (in.bad()) return base::Status::ioError("cannot read " + path);
  return std::optional<std::string>(std::move(text));
}

base::Status writeReportFile(const std::string& path, const std::string& html) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << html;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      return base::Status::ioError("cannot write " + temporary);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    base::Status error = base::Status::ioError("cannot rename " + temporary + " to " + path + ": " +
                                               std::strerror(errno));
    std::remove(temporary.c_str());
    return error;
  }
  return {};
}

base::Status writeRunReport(const std::string& path, const ProductionOptions& options,
                            const RunSeries& series) {
  std::vector<TruthScenario> scenarios;
  if (!options.truth_path.empty()) {
    auto truth = readTruthFile(options.truth_path);
    if (!truth) return truth.status();
    scenarios = std::move(*truth);
  }
  const auto data = reportData(series, reportParameters(options), scenarios, kafka::wallClockMs());
  return writeReportFile(path, renderReport(data));
}

base::Status addVerifyToReportFile(const std::string& path, const std::string& verify_path) {
  auto existing = readReportFile(path);
  if (!existing) return existing.status();
  ordered_json data;
  if (*existing) {
    auto parsed = reportDataOf(**existing);
    if (!parsed) {
      return base::Status::failed(path + " is not a fraud-loadgen report (" + parsed.message() +
                                  "); not overwritten");
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
    auto text = readReportFile(verify_path);
    if (!text) return text.status();
    if (!*text) return base::Status::failed("cannot read " + verify_path + ": no such file");
    verify_text = std::move(**text);
  }
  if (verify_text.size() > kMaxReportBytes) {
    return base::Status::failed("verify's report is larger than " +
                                std::to_string(kMaxReportBytes) + " bytes");
  }
  const auto verify = ordered_json::parse(verify_text, nullptr, /*allow_exceptions=*/false);
  if (verify.is_discarded()) {
    return base::Status::failed((verify_path == "-" ? std::string("stdin") : verify_path) +
                                " is not JSON (the stdout of `fraud-loadgen verify`)");
  }
  if (auto added = addVerifyResult(data, verify, kafka::wallClockMs()); !added.ok()) return added;
  return writeReportFile(path, renderReport(data));
}

}  // namespace fraud::loadgen
