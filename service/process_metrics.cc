#include "service/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace fraud::service {
namespace {

std::optional<std::string> readWholeFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// The next space-separated token of `text` from `pos`, as a number.
std::optional<double> nextNumber(std::string_view text, size_t& pos) {
  while (pos < text.size() && text[pos] == ' ') ++pos;
  const size_t start = pos;
  while (pos < text.size() && text[pos] != ' ' && text[pos] != '\n') ++pos;
  if (start == pos) return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data() + start, text.data() + pos, value);
  if (ec != std::errc() || end != text.data() + pos) return std::nullopt;
  return static_cast<double>(value);
}

bool skipToken(std::string_view text, size_t& pos) {
  while (pos < text.size() && text[pos] == ' ') ++pos;
  const size_t start = pos;
  while (pos < text.size() && text[pos] != ' ' && text[pos] != '\n') ++pos;
  return pos > start;
}

// Open descriptors of this process, less the one that reads the directory.
std::optional<double> countOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  const int own = ::dirfd(dir);
  double count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    int fd = -1;
    const std::string_view name(entry->d_name);
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), fd);
    if (ec == std::errc() && end == name.data() + name.size() && fd == own) continue;
    ++count;
  }
  ::closedir(dir);
  return count;
}

prometheus::MetricFamily oneValue(const char* name, const char* help, prometheus::MetricType type,
                                  double value) {
  prometheus::MetricFamily family{.name = name, .help = help, .type = type, .metric = {}};
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
  return family;
}

}  // namespace

std::optional<ProcessStats> parseProcStat(std::string_view pid_stat, std::string_view system_stat,
                                          double ticks_per_second, double page_size) {
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so fields are counted
  // from the last ')'. After it come fields 3 (state) onwards of proc(5).
  const size_t close_paren = pid_stat.rfind(')');
  if (close_paren == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0) {
    return std::nullopt;
  }
  size_t pos = close_paren + 1;
  std::array<double, 25> field{};  // field[i]: proc(5) field i, for those read
  for (int i = 3; i <= 24; ++i) {
    const bool wanted = i == 14 || i == 15 || i == 22 || i == 23 || i == 24;
    if (!wanted) {
      if (!skipToken(pid_stat, pos)) return std::nullopt;
      continue;
    }
    const auto value = nextNumber(pid_stat, pos);
    if (!value) return std::nullopt;
    field[static_cast<size_t>(i)] = *value;
  }
  std::optional<double> boot_time;
  for (size_t line = 0; line < system_stat.size();) {
    size_t end = system_stat.find('\n', line);
    if (end == std::string_view::npos) end = system_stat.size();
    const auto text = system_stat.substr(line, end - line);
    if (text.starts_with("btime ")) {
      size_t p = 5;
      boot_time = nextNumber(text, p);
      break;
    }
    line = end + 1;
  }
  if (!boot_time) return std::nullopt;
  ProcessStats stats;
  stats.cpu_seconds = (field[14] + field[15]) / ticks_per_second;
  stats.start_time_seconds = *boot_time + field[22] / ticks_per_second;
  stats.virtual_bytes = field[23];
  stats.resident_bytes = field[24] * page_size;
  return stats;
}

std::optional<ProcessStats> readProcessStats() {
  const auto pid_stat = readWholeFile("/proc/self/stat");
  const auto system_stat = readWholeFile("/proc/stat");
  if (!pid_stat || !system_stat) return std::nullopt;
  auto stats = parseProcStat(*pid_stat, *system_stat, static_cast<double>(::sysconf(_SC_CLK_TCK)),
                             static_cast<double>(::sysconf(_SC_PAGESIZE)));
  if (!stats) return std::nullopt;
  const auto fds = countOpenFds();
  if (!fds) return std::nullopt;
  stats->open_fds = *fds;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return std::nullopt;
  stats->max_fds = static_cast<double>(limit.rlim_cur);
  return stats;
}

std::vector<prometheus::MetricFamily> processFamilies(const ProcessStats& stats) {
  using prometheus::MetricType;
  return {
      oneValue("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
               MetricType::Counter, stats.cpu_seconds),
      oneValue("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
               stats.open_fds),
      oneValue("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
               stats.max_fds),
      oneValue("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
               stats.virtual_bytes),
      oneValue("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
               stats.resident_bytes),
      oneValue("process_start_time_seconds",
               "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
               stats.start_time_seconds),
  };
}

std::vector<prometheus::MetricFamily> ServiceRegistry::Collect() const {
  auto families = Registry::Collect();
  // procfs unreadable (not Linux, hidepid): the families are left out rather than reported as 0.
  if (const auto stats = readProcessStats()) {
    auto process = processFamilies(*stats);
    families.insert(families.end(), std::make_move_iterator(process.begin()),
                    std::make_move_iterator(process.end()));
  }
  return families;
}

}  // namespace fraud::service
