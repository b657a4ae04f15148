#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detectors/base/status.h"

namespace fraud::loadgen {

// What the service says it did with its input records: `fraud_records_total` by outcome
// (docs/operations.md, "Metrics"), read from the Prometheus text of its /metrics and summed
// over instances. The loadgen reads it before and after a run (`--service-metrics URL`), so the
// difference is what the service did with the run's records: its share dropped as too late,
// next to the share the loadgen stamped beyond the grace.
struct ServiceRecordCounts {
  double accepted = 0;
  double late_dropped = 0;
  double duplicate = 0;
  double rejected = 0;

  // Records that passed decoding: the ones the service measures lateness on.
  [[nodiscard]] double valid() const { return accepted + late_dropped + duplicate; }
  [[nodiscard]] double total() const { return valid() + rejected; }
  [[nodiscard]] ServiceRecordCounts since(const ServiceRecordCounts& before) const;
};

// The counts in a /metrics text; an error when the text holds no fraud_ metric at all (not the
// service's /metrics). A counter not there yet (no such record so far) counts 0.
[[nodiscard]] base::Result<ServiceRecordCounts> recordCountsIn(std::string_view metrics_text);

// http://HOST[:PORT][/PATH]: the only form read (the service's probe port serves /metrics over
// plain HTTP even when its API uses TLS). PATH defaults to /metrics, PORT to 80.
struct HttpUrl {
  std::string host;
  std::string port;
  std::string path;
};
[[nodiscard]] base::Result<HttpUrl> parseHttpUrl(std::string_view url);

// The body of a 200 answer to GET `url` (HTTP/1.0, so the answer ends with the connection); an
// error on any failure or after `timeout_ms` without progress.
[[nodiscard]] base::Result<std::string> httpGet(const HttpUrl& url, int timeout_ms);

// Reads every URL's counts and sums them; an error naming the URL when one fails.
[[nodiscard]] base::Result<ServiceRecordCounts> scrapeRecordCounts(
    const std::vector<std::string>& urls);

// The service's tally of a run's records: its counts before the run, and after it once it has
// counted as many records as were acknowledged (or a wait ran out). Producing thread only.
class ServiceTally {
 public:
  explicit ServiceTally(std::vector<std::string> urls) : urls_(std::move(urls)) {}

  // Reads the counts before the run; an error when a URL cannot be read.
  [[nodiscard]] base::Status start();
  // Reads them again until they grew by `records` or `wait_s` passed.
  void finish(uint64_t records, double wait_s);
  // The summary's lateness.service: the run's valid records as the service counted them, those
  // it dropped as too late and their share, whether it counted all of them; or "not read: …".
  [[nodiscard]] nlohmann::ordered_json summary() const;

 private:
  std::vector<std::string> urls_;
  ServiceRecordCounts before_;
  std::optional<ServiceRecordCounts> run_;
  std::string error_ = "the run ended before the service was read";
  uint64_t records_ = 0;
};

}  // namespace fraud::loadgen
