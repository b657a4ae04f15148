#include "loadgen/report_tables.h"

#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "loadgen/report_html.h"
#include "loadgen/svg_chart.h"

namespace fraud::loadgen::html {

using svg::escape;
using svg::formatCount;
using svg::formatFixed;

std::string verifySection(const ordered_json& data) {
  std::string out = R"(<section class="card" id="verify"><h2>Verify</h2>)";
  const auto* verify = field(data, "verify");
  if (verify == nullptr) {
    return out +
           "<p class=\"hint\">Not verified yet. Audit the run and add the verdict here:<br><code>"
           "fraud-loadgen verify --brokers … --truth truth.jsonl &gt; verify.json</code> then "
           "<code>fraud-loadgen report THIS.html --verify verify.json</code></p></section>";
  }
  const std::string verdict = text(field(verify, "verdict"));
  out +=
      "<p class=\"legend\">The detection engine run offline over every input record, "
      "compared with the alerts and dead-letter topics by idempotency key";
  if (const auto* at = field(data, "verified_at"); at != nullptr) {
    out += " (verified " + escape(text(at)) + ")";
  }
  out += ".</p><div class=\"columns\">";
  for (const auto& [section, heading, topic] :
       {std::tuple{"alerts", "alerts", "on the alerts topic"},
        std::tuple{"dlq", "dead letters", "on the dead-letter topic"}}) {
    out +=
        "<div><table><tr><th>" + std::string(heading) + R"(</th><th class="num">count</th></tr>)";
    const auto* counts = field(verify, section);
    out += countRow("expected (offline engine)", field(counts, "expected"), false);
    out += countRow(topic, field(counts, "records"), false);
    for (const auto* name : {"missing", "unexpected", "differing", "duplicates", "malformed"}) {
      out += countRow(name, field(field(counts, name), "count"), true);
    }
    out += "</table></div>";
  }
  out += "</div><table>";
  const auto* group = field(verify, "group");
  if (group != nullptr) {
    out += row({"consumer group " + text(field(group, "id")) + " caught up",
                text(field(group, "caught_up")) +
                    (number(group, "waited_s")
                         ? " (waited " + formatFixed(*number(group, "waited_s"), 1) + " s)"
                         : "")},
               {"", ""});
  }
  const auto* truth = field(verify, "truth");
  if (truth != nullptr) {
    const auto scenarios = number(truth, "scenarios");
    const auto recalled = number(truth, "recalled");
    out += row({"injected fraud recalled", countText(recalled) + " of " + countText(scenarios)},
               {"", scenarios && recalled && *scenarios == *recalled ? "ok" : "bad"});
  }
  out += row({"verdict", verdict}, {"", verdict == "pass" ? "ok" : "bad"});
  out += "</table>";
  const auto* notes = field(verify, "notes");
  if (notes != nullptr && notes->is_array() && !notes->empty()) {
    out += "<p class=\"hint\">Notes:</p><ul>";
    for (const auto& n : *notes) out += "<li>" + escape(text(&n)) + "</li>";
    out += "</ul>";
  }
  out += "<details><summary>verify's full report (JSON)</summary><pre class=\"mono\">" +
         escape(verify->dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) +
         "</pre></details>";
  return out + "</section>";
}

std::string scenariosSection(const ordered_json& data, const ordered_json* summary) {
  std::string out = R"(<section class="card" id="scenarios"><h2>Injected fraud</h2>)";
  const auto* scenarios = field(data, "scenarios");
  const auto* items = field(scenarios, "items");
  const auto* injected = field(field(summary, "scenarios"), "injected");
  const auto* must = field(field(summary, "scenarios"), "must_alert");
  out += "<p class=\"legend\">" + escape(countText(number(injected))) + " scenarios injected; " +
         escape(countText(number(must))) +
         " must alert (the rule: N distinct countries within W). A scenario is recalled when an "
         "alert names its card_ref and its window holds one of the scenario's records.</p>";
  if (items == nullptr || !items->is_array() || items->empty()) {
    return out + emptyChart("No truth file: run fraud-loadgen with --truth FILE to list them.") +
           "</section>";
  }
  // Recall marks from verify: the listed misses are misses; the rest are recalled when the list
  // is complete.
  std::set<uint64_t> missed;
  bool complete = false;
  const auto* truth = field(field(data, "verify"), "truth");
  if (truth != nullptr) {
    const auto* list = field(truth, "missed");
    if (list != nullptr && list->is_array()) {
      for (const auto& m : *list) {
        if (m.is_number_unsigned() || m.is_number_integer()) missed.insert(m.get<uint64_t>());
      }
    }
    const auto total = number(truth, "scenarios");
    const auto recalled = number(truth, "recalled");
    complete = total && recalled && *total - *recalled == static_cast<double>(missed.size());
  }
  const auto model_start = number(field(summary, "model_clock"), "start");
  out +=
      "<table><tr><th class=\"num\">#</th><th>card_ref</th><th class=\"num\">partition</th>"
      "<th>countries</th><th class=\"num\">records</th><th class=\"num\">spread</th>"
      "<th class=\"num\">first record</th><th>recalled</th></tr>";
  for (const auto& item : *items) {
    const auto id = number(&item, "scenario");
    std::string countries;
    if (const auto* c = field(&item, "countries"); c != nullptr && c->is_array()) {
      for (const auto& country : *c) countries += (countries.empty() ? "" : " ") + text(&country);
    }
    const std::string card_ref = text(field(&item, "card_ref"));
    const auto first = number(&item, "first_event_time");
    const auto span = number(&item, "span_ms");
    std::string recalled = "not verified";
    std::string cls;
    if (truth != nullptr && id) {
      const bool was_missed = missed.count(static_cast<uint64_t>(*id)) > 0;
      recalled = was_missed ? "missed" : complete ? "yes" : "?";
      cls = was_missed ? "bad" : complete ? "ok" : "";
    }
    out += "<tr><td class=\"num\">" + escape(countText(id)) + R"(</td><td class="mono" title=")" +
           escape(card_ref) + "\">" + escape(card_ref.substr(0, 16)) +
           (card_ref.size() > 16 ? "…" : "") + "</td><td class=\"num\">" +
           escape(countText(number(&item, "partition"))) + "</td><td>" + escape(countries) +
           "</td><td class=\"num\">" + escape(countText(number(&item, "records"))) +
           "</td><td class=\"num\">" + escape(span ? formatFixed(*span / 1000, 1) + " s" : "n/a") +
           "</td><td class=\"num\">" +
           escape(first && model_start ? signedSeconds((*first - *model_start) / 1000) : "n/a") +
           "</td><td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + escape(recalled) +
           "</td></tr>";
  }
  out += "</table>";
  const auto total = number(scenarios, "total");
  if (total && *total > static_cast<double>(items->size())) {
    out += "<p class=\"hint\">The first " + formatCount(static_cast<double>(items->size())) +
           " of " + formatCount(*total) + " are listed; the truth file has them all.</p>";
  }
  return out + "</section>";
}

std::string kindsAndRunSection(const ordered_json* summary) {
  std::string out =
      R"(<section class="card"><div class="columns"><div><h2>Records by kind</h2><table>)";
  const auto* kinds = field(summary, "kinds");
  if (kinds != nullptr && kinds->is_object()) {
    for (const auto& [name, value] : kinds->items()) {
      out += row({name, countText(number(&value))}, {"", "num"});
    }
  }
  out += row({"total", countText(number(summary, "records"))}, {"", "num"});
  out += "</table></div><div><h2>Production</h2><table>";
  const std::vector<std::pair<std::string, std::string>> facts = {
      {"partitions", countText(number(summary, "partitions"))},
      {"partitioner", text(field(summary, "partitioner"))},
      {"acknowledged", countText(number(summary, "acked"))},
      {"delivery errors", countText(number(summary, "errors"))},
      {"queue-full waits", countText(number(summary, "queue_full_waits"))},
      {"production time",
       number(summary, "elapsed_s") ? formatFixed(*number(summary, "elapsed_s"), 1) + " s" : "n/a"},
      {"loadgen CPU",
       number(summary, "cpu_s") ? formatFixed(*number(summary, "cpu_s"), 1) + " s" : "n/a"},
  };
  for (const auto& [name, value] : facts) out += row({name, value}, {"", "num"});
  const auto* reasons = field(summary, "error_reasons");
  if (reasons != nullptr && reasons->is_object()) {
    for (const auto& [name, value] : reasons->items()) {
      out += row({"error " + name, countText(number(&value))}, {"", "num bad"});
    }
  }
  return out + "</table></div></div></section>";
}

std::string parametersSection(const ordered_json& data) {
  std::string out = R"(<section class="card" id="parameters"><h2>Parameters</h2><table>)";
  const auto* params = field(data, "parameters");
  if (params != nullptr && params->is_array()) {
    for (const auto& p : *params) {
      if (!p.is_array() || p.size() < 2) continue;
      out += row({text(&p[0]), text(&p[1])}, {"", "mono"});
    }
  }
  return out + "</table></section>";
}

}  // namespace fraud::loadgen::html
