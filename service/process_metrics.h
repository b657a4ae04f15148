#pragma once

#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <optional>
#include <string_view>
#include <vector>

// The process_* metrics every Prometheus exporter reports (CPU, memory, descriptors, start
// time), read from procfs at each scrape. Free functions and a registry: thread-safe.
namespace fraud::service {

// The standard process_* figures every Prometheus exporter reports, read from procfs.
struct ProcessStats {
  double cpu_seconds = 0;         // user + system CPU time
  double resident_bytes = 0;      // resident set size
  double virtual_bytes = 0;       // virtual memory size
  double start_time_seconds = 0;  // since the Unix epoch
  double open_fds = 0;
  double max_fds = 0;  // the soft RLIMIT_NOFILE
};

// The fields of `pid_stat` (the text of /proc/PID/stat) and the btime line of `system_stat`
// (/proc/stat) that ProcessStats holds; the file descriptor fields are left 0. Nothing when
// either text is malformed. `ticks_per_second` is sysconf(_SC_CLK_TCK).
[[nodiscard]] std::optional<ProcessStats> parseProcStat(std::string_view pid_stat,
                                                        std::string_view system_stat,
                                                        double ticks_per_second, double page_size);
// This process's figures, from /proc/self and /proc/stat; nothing when procfs is unreadable.
[[nodiscard]] std::optional<ProcessStats> readProcessStats();
// The process_* families of `stats`, named and typed as the Prometheus client libraries do.
[[nodiscard]] std::vector<prometheus::MetricFamily> processFamilies(const ProcessStats& stats);

// The service's registry: every scrape (Collect) also reads the process_* families at that
// moment, so they are current even while the ingest loop is stalled. Thread-safe like Registry.
class ServiceRegistry final : public prometheus::Registry {
 public:
  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace fraud::service
