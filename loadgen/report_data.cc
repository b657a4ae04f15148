#include "loadgen/report_data.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <utility>

#include "loadgen/latency_tracker.h"

namespace fraud::loadgen {
namespace {

using nlohmann::ordered_json;

// Latency histogram: this many logarithmic bins per decade of milliseconds.
constexpr int kBinsPerDecade = 10;
constexpr double kFloorMs = 0.01;  // latencies below count in the bin of 0.01 ms
// Latency percentiles over time: about this many buckets, of at least this many alerts each on
// average.
constexpr double kLatencyBuckets = 30;
constexpr double kAlertsPerBucket = 10;

std::string fixed(double v, int decimals) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.*f", decimals, v);
  return buffer.data();
}

double secondsSince(int64_t start_ns, int64_t at_ns) {
  return static_cast<double>(at_ns - start_ns) / 1e9;
}

ordered_json rateData(const RunSeries& s) {
  ordered_json out;
  // Whole seconds only: the last, partial second would read as a drop.
  size_t seconds = std::min(s.sent_per_second.size(), static_cast<size_t>(s.production_s));
  if (seconds == 0) seconds = std::min<size_t>(s.sent_per_second.size(), 1);
  const size_t step = std::max<size_t>(1, (seconds + kMaxSeriesPoints - 1) / kMaxSeriesPoints);
  ordered_json points = ordered_json::array();
  for (size_t i = 0; i < seconds; i += step) {
    const size_t end = std::min(seconds, i + step);
    uint64_t sum = 0;
    for (size_t k = i; k < end; ++k) sum += s.sent_per_second[k];
    const auto width = static_cast<double>(end - i);
    points.push_back({static_cast<double>(i) + width / 2, static_cast<double>(sum) / width});
  }
  out["interval_s"] = step;
  out["points"] = std::move(points);
  return out;
}

ordered_json lagData(const RunSeries& s) {
  ordered_json points = ordered_json::array();
  const size_t step = std::max<size_t>(1, (s.lag.size() + kMaxSeriesPoints - 1) / kMaxSeriesPoints);
  for (size_t i = 0; i < s.lag.size(); i += step) {
    // The largest sample of each group: thinning must not hide a peak.
    const size_t end = std::min(s.lag.size(), i + step);
    TimedValue peak = s.lag[i];
    for (size_t k = i; k < end; ++k) {
      if (s.lag[k].value > peak.value) peak = s.lag[k];
    }
    points.push_back({std::max(0.0, secondsSince(s.start_ns, peak.at_ns)), peak.value});
  }
  return ordered_json{{"points", std::move(points)}};
}

std::optional<double> percentileMs(std::vector<int64_t>& sorted_ns, double p) {
  const auto ns = nearestRank(sorted_ns, p);
  if (!ns) return std::nullopt;
  return static_cast<double>(*ns) / 1e6;
}

ordered_json latencyData(const RunSeries& s) {
  ordered_json out;
  out["count"] = s.latencies.size();
  if (s.latencies.empty()) return out;

  std::vector<int64_t> all;
  all.reserve(s.latencies.size());
  for (const auto& l : s.latencies) all.push_back(std::max<int64_t>(l.latency_ns, 0));
  std::sort(all.begin(), all.end());
  for (const auto& [name, p] : {std::pair{"p50_ms", 50.0}, std::pair{"p95_ms", 95.0},
                                std::pair{"p99_ms", 99.0}, std::pair{"max_ms", 100.0}}) {
    out[name] = *percentileMs(all, p);
  }

  // Histogram on logarithmic bins: edge k is 10^(k / kBinsPerDecade) ms.
  const auto bin = [](double ms) {
    return static_cast<int>(std::floor(std::log10(std::max(ms, kFloorMs)) * kBinsPerDecade));
  };
  const int first = bin(static_cast<double>(all.front()) / 1e6);
  const int last = bin(static_cast<double>(all.back()) / 1e6);
  std::vector<uint64_t> counts(static_cast<size_t>(last - first + 1), 0);
  for (const int64_t ns : all)
    ++counts[static_cast<size_t>(bin(static_cast<double>(ns) / 1e6) - first)];
  ordered_json edges = ordered_json::array();
  for (int k = first; k <= last + 1; ++k)
    edges.push_back(std::pow(10.0, k / double{kBinsPerDecade}));
  out["histogram"] = {{"edges_ms", std::move(edges)}, {"counts", counts}};

  // Percentiles per bucket of trigger production time.
  double span = s.production_s;
  for (const auto& l : s.latencies) span = std::max(span, secondsSince(s.start_ns, l.produced_ns));
  const double width =
      std::max({1.0, std::ceil(span / kLatencyBuckets),
                std::ceil(span * kAlertsPerBucket / static_cast<double>(s.latencies.size()))});
  std::vector<std::vector<int64_t>> buckets(static_cast<size_t>(std::ceil(span / width)) + 1);
  for (const auto& l : s.latencies) {
    const double t = std::max(0.0, secondsSince(s.start_ns, l.produced_ns));
    buckets[std::min(buckets.size() - 1, static_cast<size_t>(t / width))].push_back(
        std::max<int64_t>(l.latency_ns, 0));
  }
  ordered_json points = ordered_json::array();
  for (size_t b = 0; b < buckets.size(); ++b) {
    auto& values = buckets[b];
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    points.push_back({(static_cast<double>(b) + 0.5) * width, values.size(),
                      *percentileMs(values, 50), *percentileMs(values, 95),
                      *percentileMs(values, 99)});
  }
  out["over_time"] = {{"width_s", width}, {"points", std::move(points)}};
  return out;
}

// The lateness histogram's bin edges in whole milliseconds: kBinsPerDecade a decade from 1 ms
// (lateness 0 counts in the first bin) past `top`, and grace + 1 so that the bins split between
// the records kept (lateness <= grace) and those dropped.
std::vector<int64_t> latenessEdges(int64_t top, int64_t grace_ms, bool any_beyond) {
  std::vector<int64_t> edges = {1};
  for (int k = 1; edges.back() <= top; ++k) {
    const auto edge = static_cast<int64_t>(std::ceil(std::pow(10.0, k / double{kBinsPerDecade})));
    if (edge > edges.back()) edges.push_back(edge);
  }
  if (any_beyond && grace_ms + 1 > 1) edges.push_back(grace_ms + 1);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

ordered_json latenessData(const LatenessTruth& truth) {
  ordered_json out;
  out["count"] = truth.count();
  out["grace_ms"] = truth.graceMs();
  out["beyond_grace"] = truth.beyondGrace();
  if (truth.count() == 0) return out;
  out["beyond_grace_share"] =
      static_cast<double>(truth.beyondGrace()) / static_cast<double>(truth.count());
  for (const auto& [name, q] : {std::pair{"p50_ms", 0.5}, std::pair{"p99_ms", 0.99}}) {
    out[name] = truth.quantile(q);
  }
  out["max_ms"] = truth.max();

  const int64_t grace = truth.graceMs();
  const auto buckets = truth.buckets();
  // The truth's buckets are 100 ms wide above 10 s: the one holding the grace may hold records
  // on both sides. Its share beyond is what the exact count leaves to the buckets wholly beyond.
  uint64_t wholly_beyond = 0;
  int64_t top = 1;
  for (const auto& b : buckets) {
    if (b.low_ms > grace) wholly_beyond += b.count;
    top = std::max(top, b.low_ms);
  }
  const uint64_t straddling = truth.beyondGrace() - std::min(truth.beyondGrace(), wholly_beyond);
  if (truth.beyondGrace() > 0) top = std::max(top, grace + 1);
  const auto edges = latenessEdges(top, grace, truth.beyondGrace() > 0);
  std::vector<uint64_t> counts(edges.size() - 1, 0);
  const auto binOf = [&](int64_t ms) {
    const auto at = std::upper_bound(edges.begin(), edges.end(), std::max<int64_t>(ms, 1));
    return std::min(counts.size() - 1, static_cast<size_t>(at - edges.begin()) - 1);
  };
  for (const auto& b : buckets) {
    const bool holds_grace = b.low_ms <= grace && grace < b.high_ms;
    const uint64_t moved = holds_grace ? std::min(straddling, b.count) : 0;
    counts[binOf(b.low_ms)] += b.count - moved;
    if (moved > 0) counts[binOf(grace + 1)] += moved;
  }
  const auto beyond_from = truth.beyondGrace() > 0 ? binOf(grace + 1) : counts.size();
  out["histogram"] = {{"edges_ms", edges}, {"counts", counts}, {"beyond_from", beyond_from}};
  return out;
}

ordered_json scenarioData(const std::vector<TruthScenario>& scenarios) {
  ordered_json items = ordered_json::array();
  std::vector<const TruthScenario*> sorted;
  sorted.reserve(scenarios.size());
  for (const auto& s : scenarios) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->scenario < b->scenario; });
  for (const auto* s : sorted) {
    if (items.size() >= kMaxListedScenarios) break;
    ordered_json item;
    item["scenario"] = s->scenario;
    item["card_ref"] = s->card_ref;
    item["partition"] = s->partition;
    item["countries"] = s->countries;
    item["records"] = s->event_times.size();
    if (!s->event_times.empty()) {
      const auto [lo, hi] = std::minmax_element(s->event_times.begin(), s->event_times.end());
      item["first_event_time"] = *lo;
      item["span_ms"] = *hi - *lo;
    }
    items.push_back(std::move(item));
  }
  return ordered_json{{"total", scenarios.size()}, {"items", std::move(items)}};
}

}  // namespace

std::string utcTime(int64_t epoch_ms) {
  const auto seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  std::array<char, 32> buffer{};
  std::strftime(buffer.data(), buffer.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer.data();
}

std::vector<ReportParameter> reportParameters(const ProductionOptions& o) {
  const auto& t = o.traffic;
  std::vector<ReportParameter> p;
  p.push_back({"brokers", o.brokers.empty() ? "(none: files only)" : o.brokers});
  if (!o.brokers.empty()) {
    p.push_back({"topic", o.topic});
    p.push_back({"alerts topic", o.alerts_topic});
  }
  p.push_back({"target rate", o.rate ? fixed(*o.rate, 0) + " tx/s" : "max"});
  p.push_back({"duration", o.duration_s ? fixed(*o.duration_s, 1) + " s" : "(none)"});
  p.push_back({"count", o.count ? std::to_string(*o.count) : "(none)"});
  p.push_back({"seed", std::to_string(t.seed)});
  p.push_back(
      {"model clock start", std::to_string(t.start_time) + " (" + utcTime(t.start_time) + ")"});
  p.push_back({"model rate", fixed(t.model_rate, 0) + " tx/s"});
  p.push_back({"cards", std::to_string(t.cards)});
  p.push_back({"partitioner", std::string(detectors::partitionerName(o.partitioner))});
  p.push_back({"fraud rate", fixed(t.fraud_rate, 2) + " scenarios/s"});
  p.push_back({"escalation fraction", fixed(t.escalation_fraction, 3)});
  p.push_back({"travel fraction", fixed(t.travel_fraction, 3)});
  p.push_back({"max lateness", std::to_string(t.max_lateness_ms) + " ms"});
  p.push_back({"late tail fraction", fixed(t.late_tail_fraction, 3)});
  if (t.mixture) {
    p.push_back({"lateness model", "mixture: body " + fixed(t.mixture->body_fraction, 3) +
                                       " (median " + fixed(t.mixture->body_median_ms, 0) +
                                       " ms, sigma " + fixed(t.mixture->body_sigma, 2) +
                                       "), stragglers " + fixed(t.mixture->straggler_fraction, 3)});
  } else {
    p.push_back({"lateness model", "classic"});
  }
  p.push_back({"beyond-grace fraction", fixed(t.beyond_grace_fraction, 4)});
  p.push_back({"duplicate fraction", fixed(t.duplicate_fraction, 4)});
  p.push_back({"malformed fraction", fixed(t.malformed_fraction, 4)});
  p.push_back({"RFC 3339 fraction", fixed(t.rfc3339_fraction, 3)});
  p.push_back({"window W", std::to_string(t.detector.window_ms) + " ms"});
  p.push_back({"grace G", std::to_string(t.detector.grace_ms) + " ms"});
  p.push_back({"threshold N", std::to_string(t.detector.threshold) + " countries"});
  p.push_back({"max events M", std::to_string(t.detector.max_events)});
  p.push_back({"max future skew", std::to_string(o.max_future_skew_ms) + " ms"});
  p.push_back({"latency measured", o.measure_latency ? "yes" : "no (--no-latency)"});
  p.push_back({"latency wait", fixed(o.latency_wait_s, 1) + " s"});
  p.push_back({"lag group", o.lag_group.empty() ? "(none)" : o.lag_group});
  std::string metrics;
  for (const auto& url : o.service_metrics) metrics += (metrics.empty() ? "" : ", ") + url;
  p.push_back({"service metrics", metrics.empty() ? "(none)" : metrics});
  p.push_back({"truth file", o.truth_path.empty() ? "(none)" : o.truth_path});
  if (!o.output_dir.empty()) p.push_back({"output directory", o.output_dir});
  if (!o.output_single.empty()) p.push_back({"output file", o.output_single});
  if (!o.kafka_properties.empty()) {
    std::string names;
    for (const auto& [name, value] : o.kafka_properties) {
      names += (names.empty() ? "" : ", ") + name;
    }
    p.push_back({"librdkafka properties (values not shown)", names});
  }
  return p;
}

ordered_json reportData(const RunSeries& series, const std::vector<ReportParameter>& parameters,
                        const std::vector<TruthScenario>& scenarios, int64_t generated_at_ms) {
  ordered_json data = emptyReportData(generated_at_ms);
  ordered_json params = ordered_json::array();
  for (const auto& p : parameters) params.push_back({p.name, p.value});
  data["parameters"] = std::move(params);
  ordered_json run;
  run["production_s"] = series.production_s;
  run["summary"] = series.summary;
  run["rate"] = rateData(series);
  run["lag"] = lagData(series);
  run["latency"] = latencyData(series);
  run["lateness"] = latenessData(series.lateness);
  data["run"] = std::move(run);
  data["scenarios"] = scenarioData(scenarios);
  return data;
}

ordered_json emptyReportData(int64_t generated_at_ms) {
  ordered_json data;
  data["format"] = std::string(kReportFormat);
  data["generated_at"] = utcTime(generated_at_ms);
  return data;
}

base::Status addVerifyResult(ordered_json& data, const ordered_json& verify,
                             int64_t verified_at_ms) {
  if (!verify.is_object() || !verify.contains("verdict") || !verify["verdict"].is_string() ||
      (verify["verdict"] != "pass" && verify["verdict"] != "fail")) {
    return base::Status::failed(
        R"(not a report of `fraud-loadgen verify` (no "verdict": "pass" or "fail"))");
  }
  data["verify"] = verify;
  data["verified_at"] = utcTime(verified_at_ms);
  return {};
}

}  // namespace fraud::loadgen
