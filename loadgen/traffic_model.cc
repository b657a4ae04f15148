#include "loadgen/traffic_model.h"

#include <algorithm>
#include <numeric>

#include "loadgen/countries.h"

namespace fraud::loadgen {
namespace {

using detectors::Country;
using detectors::EventTime;

constexpr size_t kRecentRecords = 1024;
constexpr int64_t kMinTravelPeriodMs = 3'600'000;
// Ordinary records: most are sent within this of their event time.
constexpr int64_t kPromptLatenessMs = 1000;
// A scenario spreads its records over at most this (and at most half the window).
constexpr int64_t kMaxScenarioSpanMs = 300'000;
// How far behind the clock a scenario record may be stamped (and at most G and W / 2).
constexpr int64_t kMaxScenarioLatenessMs = 1000;
constexpr double kLowercaseCountryFraction = 0.01;
constexpr uint32_t kMerchants = 1'000'000;

bool isFraction(double value) { return value >= 0 && value <= 1; }

}  // namespace

std::vector<std::string> TrafficOptions::validate() const {
  std::vector<std::string> problems = detector.validate();
  if (start_time < 0 || start_time > detectors::kMaxEventTime) {
    problems.push_back("start time must lie in 0.." + std::to_string(detectors::kMaxEventTime));
  }
  if (!(model_rate > 0 && model_rate <= 1e9))
    problems.push_back("the model rate must lie in (0, 1e9]");
  if (cards < 1) problems.push_back("cards must be >= 1");
  if (!(fraud_rate >= 0)) problems.push_back("fraud rate must be >= 0");
  if (fraud_rate > 0 && detector.threshold > countryCount()) {
    problems.push_back("threshold " + std::to_string(detector.threshold) + " exceeds the model's " +
                       std::to_string(countryCount()) +
                       " countries: no fraud scenario can be injected (use --fraud-rate 0)");
  }
  if (max_lateness_ms < 0) problems.push_back("max lateness must be >= 0");
  const std::pair<const char*, double> fractions[] = {
      {"travel fraction", travel_fraction},       {"escalation fraction", escalation_fraction},
      {"late tail fraction", late_tail_fraction}, {"beyond-grace fraction", beyond_grace_fraction},
      {"duplicate fraction", duplicate_fraction}, {"malformed fraction", malformed_fraction},
      {"RFC 3339 fraction", rfc3339_fraction}};
  for (const auto& [name, value] : fractions) {
    if (!isFraction(value)) problems.push_back(std::string(name) + " must lie in 0..1");
  }
  if (duplicate_fraction + malformed_fraction > 1) {
    problems.push_back("duplicate and malformed fractions must add up to at most 1");
  }
  if (mixture) {
    for (auto& problem : mixture->validate()) problems.push_back(std::move(problem));
  }
  return problems;
}

std::string_view recordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kOrganic:
      return "organic";
    case RecordKind::kBeyondGrace:
      return "beyond_grace";
    case RecordKind::kFraud:
      return "fraud";
    case RecordKind::kDuplicate:
      return "duplicate";
    case RecordKind::kMalformed:
      return "malformed";
  }
  return "?";
}

bool FraudScenario::mustAlert(const detectors::DetectorOptions& options) const {
  if (event_times.empty()) return false;
  std::vector<Country> distinct = sent_countries;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const auto [lo, hi] = std::minmax_element(event_times.begin(), event_times.end());
  return distinct.size() >= options.threshold && *hi - *lo <= options.window_ms;
}

TrafficModel::TrafficModel(const TrafficOptions& options)
    : options_(options),
      lateness_truth_(options.detector.grace_ms),
      population_(options.cards, options.seed,
                  std::max(kMinTravelPeriodMs, options.detector.window_ms + 1),
                  options.travel_fraction),
      random_(options.seed),
      ms_per_record_(1000.0 / options.model_rate),
      integral_rate_(options.model_rate ==
                             static_cast<double>(static_cast<uint64_t>(options.model_rate))
                         ? static_cast<uint64_t>(options.model_rate)
                         : 0),
      scenario_chance_(options.fraud_rate / options.model_rate),
      tx_salt_(mix64(options.seed ^ 0x7478u)) {
  recent_.reserve(kRecentRecords);
}

EventTime TrafficModel::clockAt(uint64_t index) const {
  if (integral_rate_ != 0) {
    return options_.start_time + static_cast<EventTime>(index * 1000 / integral_rate_);
  }
  return options_.start_time + static_cast<EventTime>(static_cast<double>(index) * ms_per_record_);
}

void TrafficModel::next(GeneratedRecord& out) {
  const EventTime now = clockAt(index_);
  out.sent_at = now;
  out.rejection.reset();
  out.scenario = 0;
  if (scenario_chance_ > 0 && random_.chance(scenario_chance_)) startScenario(now);
  if (!pending_steps_.empty() && pending_steps_.top().due <= now) {
    emitFraud(now, out);
  } else {
    const double u = random_.uniform();
    if (u < options_.malformed_fraction) {
      emitMalformed(now, out);
    } else if (u < options_.malformed_fraction + options_.duplicate_fraction && !recent_.empty()) {
      emitDuplicate(now, out);
    } else {
      emitOrganic(now, out);
    }
  }
  if (out.kind != RecordKind::kMalformed) lateness_truth_.add(now - out.event_time);
  ++index_;
}

void TrafficModel::writeTxId(uint64_t index) {
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t id = mix64(index ^ tx_salt_);  // a bijection of the index: ids never repeat in a run
  tx_id_[0] = 't';
  tx_id_[1] = 'x';
  tx_id_[2] = '-';
  for (int i = 18; i >= 3; --i) {
    tx_id_[i] = kHex[id & 0xF];
    id >>= 4;
  }
}

TransactionFields TrafficModel::drawFields(EventTime event_time, size_t country) {
  const CountryInfo& info = countryInfo(country);
  TransactionFields f;
  f.tx_id = std::string_view(tx_id_, sizeof(tx_id_));
  f.card = std::string_view(card_, sizeof(card_));
  f.country = info.country;
  f.currency = info.currency;
  f.event_time = event_time;
  const double u = random_.uniform();
  f.amount_cents = 50 + static_cast<int64_t>(u * u * u * 250'000);
  f.merchant = random_.below(kMerchants);
  f.lowercase_country = random_.chance(kLowercaseCountryFraction);
  if (random_.chance(options_.rfc3339_fraction)) {
    f.time_format = random_.chance(0.2) ? TimeFormat::kRfc3339Offset : TimeFormat::kRfc3339Utc;
  }
  return f;
}

int64_t TrafficModel::ordinaryLateness() {
  if (options_.mixture) return options_.mixture->draw(random_);
  const int64_t max = options_.max_lateness_ms;
  if (max > kPromptLatenessMs && random_.chance(options_.late_tail_fraction)) {
    // Pareto (alpha 1) truncated to [1 s, max]: by inverse transform, a / v for v uniform in
    // [a / b, 1]. Division only, so the sample is the same on every platform.
    const double a = kPromptLatenessMs;
    const double low = a / static_cast<double>(max);
    const double v = low + random_.uniform() * (1 - low);
    return std::min(max, static_cast<int64_t>(a / v));
  }
  // The product of two uniforms: density -ln(x), mean a quarter of the range, most near zero.
  const double x = random_.uniform() * random_.uniform();
  return static_cast<int64_t>(x * static_cast<double>(std::min(max, kPromptLatenessMs)));
}

void TrafficModel::emitOrganic(EventTime now, GeneratedRecord& out) {
  const uint32_t card = population_.pickByActivity(random_);
  population_.writePan(card, card_);
  int64_t lateness;
  if (options_.beyond_grace_fraction > 0 && random_.chance(options_.beyond_grace_fraction)) {
    // Beyond the grace behind the clock, so beyond it behind stream time too once the partition
    // has seen a prompt record: the detector drops it as late.
    lateness = options_.detector.grace_ms + 1000 + random_.below(59'001);
    out.kind = RecordKind::kBeyondGrace;
  } else {
    lateness = ordinaryLateness();
    out.kind = RecordKind::kOrganic;
  }
  const EventTime event_time = std::max<EventTime>(0, now - lateness);
  writeTxId(index_);
  const TransactionFields fields = drawFields(event_time, population_.countryAt(card, event_time));
  out.key.assign(card_, sizeof(card_));
  out.value.clear();
  appendRecordJson(out.value, fields);
  out.event_time = event_time;
  remember(out);
}

void TrafficModel::emitMalformed(EventTime now, GeneratedRecord& out) {
  const uint32_t card = population_.pickByActivity(random_);
  population_.writePan(card, card_);
  const EventTime event_time = std::max<EventTime>(0, now - ordinaryLateness());
  writeTxId(index_);
  const TransactionFields fields = drawFields(event_time, population_.countryAt(card, event_time));
  const auto malformation = static_cast<Malformation>(random_.below(kMalformationCount));
  out.kind = RecordKind::kMalformed;
  out.key.assign(card_, sizeof(card_));
  out.value.clear();
  appendMalformedRecord(out.value, fields, malformation, random_.next());
  out.event_time = event_time;
  out.rejection = rejectReasonOf(malformation);
}

void TrafficModel::emitDuplicate(EventTime /*now*/, GeneratedRecord& out) {
  const RecentRecord& original = recent_[random_.below(static_cast<uint32_t>(recent_.size()))];
  out.kind = RecordKind::kDuplicate;
  out.key = original.key;
  out.value = original.value;
  out.event_time = original.event_time;
}

void TrafficModel::remember(const GeneratedRecord& record) {
  if (recent_.size() < kRecentRecords) {
    recent_.push_back(RecentRecord{record.key, record.value, record.event_time});
    return;
  }
  RecentRecord& slot = recent_[recent_next_];
  slot.key = record.key;
  slot.value = record.value;
  slot.event_time = record.event_time;
  recent_next_ = (recent_next_ + 1) % kRecentRecords;
}

void TrafficModel::startScenario(EventTime now) {
  const auto& rule = options_.detector;
  uint32_t card = 0;
  bool found = false;
  for (int attempt = 0; attempt < 16 && !found; ++attempt) {
    card = population_.pickQuiet(random_);
    found = !scenario_cards_.contains(card);
  }
  if (!found) {
    ++scenarios_skipped_;
    return;
  }
  scenario_cards_.insert(card);

  size_t country_count = rule.threshold;
  if (random_.chance(options_.escalation_fraction)) country_count += 1 + random_.below(2);
  country_count = std::min(country_count, countryCount());
  // A partial Fisher-Yates shuffle: `country_count` distinct countries, uniformly.
  std::vector<size_t> order(countryCount());
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t i = 0; i < country_count; ++i) {
    const size_t j = i + random_.below(static_cast<uint32_t>(order.size() - i));
    std::swap(order[i], order[j]);
  }
  FraudScenario scenario;
  scenario.id = next_scenario_id_++;
  scenario.card = population_.pan(card);
  for (size_t i = 0; i < country_count; ++i) {
    scenario.countries.push_back(countryInfo(order[i]).country);
  }
  // The sequence of countries used: each once in order, and up to two repeat visits.
  std::vector<Country> sequence = scenario.countries;
  const uint32_t repeats = random_.below(3);
  for (uint32_t r = 0; r < repeats; ++r) {
    const Country again = scenario.countries[random_.below(static_cast<uint32_t>(country_count))];
    const auto at = 1 + random_.below(static_cast<uint32_t>(sequence.size()));
    sequence.insert(sequence.begin() + at, again);
  }
  // Most scenarios are quick bursts, a few take minutes: span = max * u^3 (a quarter on average).
  const double u = random_.uniform();
  const auto span = static_cast<int64_t>(
      u * u * u * static_cast<double>(std::min(kMaxScenarioSpanMs, rule.window_ms / 2)));
  std::vector<int64_t> offsets(sequence.size(), 0);
  for (size_t i = 1; i < offsets.size(); ++i) {
    offsets[i] = static_cast<int64_t>(random_.below64(static_cast<uint64_t>(span) + 1));
  }
  std::sort(offsets.begin(), offsets.end());
  for (size_t i = 0; i < sequence.size(); ++i) {
    pending_steps_.push(Step{now + offsets[i], scenario.id, static_cast<uint32_t>(i), sequence[i]});
  }
  scenario.planned_records = sequence.size();
  open_scenarios_.emplace(scenario.id, std::move(scenario));
}

void TrafficModel::emitFraud(EventTime now, GeneratedRecord& out) {
  const Step step = pending_steps_.top();
  pending_steps_.pop();
  FraudScenario& scenario = open_scenarios_.at(step.scenario);
  const auto& rule = options_.detector;
  // Within the grace of any stream time the partition can have (it is at most the clock), and
  // within half the window, so the scenario's records are all accepted and share one window.
  const int64_t max_lateness =
      std::min({kMaxScenarioLatenessMs, rule.grace_ms, rule.window_ms / 2});
  const EventTime event_time =
      std::max<EventTime>(0, now - random_.below(static_cast<uint32_t>(max_lateness) + 1));
  std::copy(scenario.card.begin(), scenario.card.end(), card_);
  writeTxId(index_);
  size_t country_index = 0;
  while (countryInfo(country_index).country != step.country) ++country_index;
  const TransactionFields fields = drawFields(event_time, country_index);

  out.kind = RecordKind::kFraud;
  out.key = scenario.card;
  out.value.clear();
  appendRecordJson(out.value, fields);
  out.event_time = event_time;
  out.scenario = scenario.id;
  remember(out);

  scenario.sent_countries.push_back(step.country);
  scenario.event_times.push_back(event_time);
  scenario.tx_ids.emplace_back(tx_id_, sizeof(tx_id_));
  if (scenario.complete()) {
    completed_scenarios_.push_back(std::move(scenario));
    open_scenarios_.erase(step.scenario);
  }
}

std::vector<FraudScenario> TrafficModel::takeCompletedScenarios() {
  std::vector<FraudScenario> done;
  done.swap(completed_scenarios_);
  return done;
}

std::vector<FraudScenario> TrafficModel::takeOpenScenarios() {
  std::vector<FraudScenario> open;
  for (auto& [id, scenario] : open_scenarios_) open.push_back(std::move(scenario));
  open_scenarios_.clear();
  return open;
}

}  // namespace fraud::loadgen
