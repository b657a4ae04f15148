#include "loadgen/lateness_model.h"

#include <algorithm>

namespace fraud::loadgen {
namespace {

constexpr double kLn2 = 0.6931471805599453;
constexpr double kPromptMs = 1'000;

// A standard normal sample, approximately: the sum of 12 uniforms less 6 (Irwin-Hall), bounded
// to +-6. Exact IEEE additions only.
double normal(Xoshiro256& random) {
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += random.uniform();
  return sum - 6;
}

}  // namespace

double portableExp(double x) {
  x = std::clamp(x, -40.0, 40.0);
  const double scaled = x / kLn2;
  const auto k = static_cast<int64_t>(scaled >= 0 ? scaled + 0.5 : scaled - 0.5);
  const double r = x - static_cast<double>(k) * kLn2;
  double term = 1;
  double sum = 1;
  for (int n = 1; n <= 16; ++n) {
    term = term * r / n;
    sum += term;
  }
  double power = 1;
  for (int64_t i = 0; i < (k >= 0 ? k : -k); ++i) power *= 2;
  return k >= 0 ? sum * power : sum / power;
}

std::vector<std::string> LatenessMixture::validate() const {
  std::vector<std::string> problems;
  if (body_fraction < 0 || body_fraction > 1) problems.push_back("late body fraction must be 0..1");
  if (straggler_fraction < 0 || straggler_fraction > 1) {
    problems.push_back("straggler fraction must be 0..1");
  }
  if (body_fraction + straggler_fraction > 1) {
    problems.push_back("late body and straggler fractions must sum to at most 1");
  }
  if (!(body_median_ms > 0)) problems.push_back("late body median must be > 0");
  if (body_sigma < 0 || body_sigma > 3) problems.push_back("late body sigma must be 0..3");
  if (max_ms < 1000) problems.push_back("max lateness must be >= 1000 ms with the mixture model");
  return problems;
}

int64_t LatenessMixture::draw(Xoshiro256& random) const {
  const double u = random.uniform();
  double ms;
  if (u < straggler_fraction) {
    // Pareto (alpha 1) truncated to [1 s, max]: a / v for v uniform in [a / b, 1].
    const double low = kPromptMs / static_cast<double>(max_ms);
    ms = kPromptMs / (low + random.uniform() * (1 - low));
  } else if (u < straggler_fraction + body_fraction) {
    ms = body_median_ms * portableExp(body_sigma * normal(random));
  } else {
    // On time: the product of two uniforms over a second (most near zero).
    ms = random.uniform() * random.uniform() * kPromptMs;
  }
  return std::clamp(static_cast<int64_t>(ms), int64_t{0}, max_ms);
}

size_t LatenessTruth::bucketOf(int64_t ms) {
  ms = std::clamp(ms, int64_t{0}, kCapMs);
  if (ms < kFineMs) return static_cast<size_t>(ms);
  return static_cast<size_t>(kFineMs + (ms - kFineMs) / kCoarseMs);
}

int64_t LatenessTruth::lowerBound(size_t b) {
  const auto i = static_cast<int64_t>(b);
  if (i < kFineMs) return i;
  return kFineMs + (i - kFineMs) * kCoarseMs;
}

int64_t LatenessTruth::upperBound(size_t b) {
  const auto i = static_cast<int64_t>(b);
  if (i < kFineMs) return i;
  return kFineMs + (i - kFineMs + 1) * kCoarseMs - 1;
}

void LatenessTruth::add(int64_t ms) {
  ++counts_[bucketOf(ms)];
  ++count_;
  if (ms > grace_ms_) ++beyond_grace_;
  max_ = std::max(max_, ms);
}

int64_t LatenessTruth::quantile(double q) const {
  if (count_ == 0) return 0;
  const double want = q * static_cast<double>(count_);
  uint64_t seen = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (static_cast<double>(seen) >= want) return std::min(upperBound(b), max_);
  }
  return max_;
}

double LatenessTruth::shareAbove(int64_t ms) const {
  if (count_ == 0) return 0;
  uint64_t above = 0;
  for (size_t b = bucketOf(ms) + 1; b < counts_.size(); ++b) above += counts_[b];
  return static_cast<double>(above) / static_cast<double>(count_);
}

std::vector<LatenessTruth::Bucket> LatenessTruth::buckets() const {
  std::vector<Bucket> out;
  for (size_t b = 0; b < counts_.size(); ++b) {
    if (counts_[b] > 0) out.push_back({lowerBound(b), upperBound(b), counts_[b]});
  }
  return out;
}

}  // namespace fraud::loadgen
