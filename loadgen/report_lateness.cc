#include "loadgen/report_lateness.h"

#include <cmath>
#include <tuple>

#include "loadgen/report_html.h"
#include "loadgen/svg_chart.h"

namespace fraud::loadgen::html {
namespace {

using svg::escape;
using svg::formatCount;
using svg::formatFixed;

std::string percentText(const std::optional<double>& share) {
  return share ? formatFixed(*share * 100, 3) + " %" : "n/a";
}

// A share's cell: the percentage shown, the exact value in data-share.
std::string shareCell(const char* id, const std::optional<double>& share) {
  std::string out = std::string(R"(<td class="num" id=")") + id + "\"";
  if (share) out += " data-share=\"" + ordered_json(*share).dump() + "\"";
  return out + ">" + escape(percentText(share)) + "</td>";
}

std::string figureRow(const std::string& who, const char* id, const std::optional<double>& records,
                      const std::optional<double>& beyond, const std::optional<double>& share) {
  return "<tr><td>" + escape(who) + R"(</td><td class="num">)" + escape(countText(records)) +
         R"(</td><td class="num">)" + escape(countText(beyond)) + "</td>" + shareCell(id, share) +
         "</tr>";
}

// The share stamped beyond the grace next to the share the service dropped.
std::string droppedShareTable(const ordered_json* lateness, const ordered_json* summary) {
  const std::string grace = durationText(number(lateness, "grace_ms").value_or(NAN));
  std::string out =
      R"(<table id="dropped-share"><tr><th></th><th class="num">valid records</th>)"
      R"(<th class="num">beyond the grace / dropped</th><th class="num">share</th></tr>)";
  out += figureRow("stamped later than the grace (" + grace + ") by fraud-loadgen",
                   "dropped-share-generated", number(lateness, "count"),
                   number(lateness, "beyond_grace"), number(lateness, "beyond_grace_share"));
  const auto* service = field(field(summary, "lateness"), "service");
  if (service != nullptr && service->is_object()) {
    out += figureRow("dropped as too late by the service (fraud_records_total, " +
                         countText(number(service, "instances")) + " instance(s))",
                     "dropped-share-service", number(service, "records"),
                     number(service, "late_dropped"), number(service, "late_dropped_share"));
  }
  out += "</table>";
  if (service == nullptr) {
    out +=
        "<p class=\"hint\">The service's own count was not read: run fraud-loadgen with "
        "<code>--service-metrics http://HOST:PORT/metrics</code> (its probe port).</p>";
  } else if (!service->is_object()) {
    out += "<p class=\"hint\">The service's count: " + escape(text(service)) + ".</p>";
  } else if (text(field(service, "counted_all")) != "yes") {
    out +=
        "<p class=\"hint\">The service had not counted every record of the run when it was "
        "read (--latency-wait ran out): its share is of the records it had counted.</p>";
  }
  return out;
}

svg::Histogram latenessHistogram(const ordered_json* lateness) {
  svg::Histogram h;
  h.id = "chart-lateness";
  h.title = "Lateness distribution against the grace";
  h.x_label = "lateness (send time minus event time)";
  h.y_label = "records";
  h.noun = "records";
  h.log_y = true;
  const auto* histogram = field(lateness, "histogram");
  const auto* edges = field(histogram, "edges_ms");
  const auto* counts = field(histogram, "counts");
  if (edges != nullptr && edges->is_array() && counts != nullptr && counts->is_array()) {
    for (const auto& e : *edges) h.edges.push_back(number(&e).value_or(NAN));
    for (const auto& c : *counts) {
      const auto v = number(&c);
      h.counts.push_back(v && *v > 0 ? static_cast<uint64_t>(*v) : 0);
    }
  }
  if (const auto from = number(histogram, "beyond_from"); from && *from >= 0) {
    h.beyond_from = static_cast<size_t>(*from);
  }
  if (const auto grace = number(lateness, "grace_ms")) {
    h.marks.push_back({"grace " + durationText(*grace), *grace, kRed});
  }
  for (const auto& [label, name, color] :
       {std::tuple{"p50", "p50_ms", kBlue}, std::tuple{"p99", "p99_ms", kAmber}}) {
    if (const auto v = number(lateness, name)) h.marks.push_back({label, *v, color});
  }
  return h;
}

}  // namespace

std::string durationText(double ms) {
  if (!std::isfinite(ms)) return "n/a";
  if (ms >= 60'000 && std::fmod(ms, 60'000) == 0) return formatCount(ms / 60'000) + " min";
  if (ms >= 1'000 && std::fmod(ms, 1'000) == 0) return formatCount(ms / 1'000) + " s";
  return formatCount(ms) + " ms";
}

std::string latenessSection(const ordered_json* run, const ordered_json* summary) {
  const auto* lateness = field(run, "lateness");
  const std::string grace = durationText(number(lateness, "grace_ms").value_or(NAN));
  std::string out =
      R"(<section class="card" id="lateness"><h2>Lateness against the grace</h2>)"
      "<p class=\"legend\">How late fraud-loadgen stamped each valid record: its send time on "
      "the model clock minus its event time, " +
      countText(number(lateness, "count")) +
      " records; logarithmic bins and counts (on time counts in the first bin)." +
      key(kTeal, "within the grace") + key(kRed, "beyond the grace " + grace) + "</p>";
  const svg::Histogram h = latenessHistogram(lateness);
  if (h.edges.size() < 2 || h.counts.empty()) {
    return out + emptyChart("No lateness recorded (a report of an older fraud-loadgen).") +
           "</section>";
  }
  out += svg::renderHistogram(h);
  out +=
      "<p class=\"legend\">The service drops a record whose event time is more than the grace "
      "behind its partition's stream time (docs/rule.md §2). Stream time never runs ahead of the "
      "send time, so every record within the grace is kept; one stamped later is dropped unless "
      "its partition's stream time is itself that far behind the send time (a partition's first "
      "records, a partition with little traffic).</p>";
  return out + droppedShareTable(lateness, summary) + "</section>";
}

}  // namespace fraud::loadgen::html
