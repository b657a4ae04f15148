#include "loadgen/progress_line.h"

#include <cstdio>
#include <string>

namespace fraud::loadgen {
namespace {

double seconds(ProgressLine::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void ProgressLine::maybePrint(Clock::time_point now, uint64_t sent, const Deliveries& deliveries,
                              rd_kafka_t* producer, std::optional<int64_t> lag) {
  if (!enabled_ || now - last_ < std::chrono::seconds(1)) return;
  const double rate = static_cast<double>(sent - last_sent_) / seconds(now - last_);
  last_ = now;
  last_sent_ = sent;
  if (producer == nullptr) {
    std::fprintf(stderr, "fraud-loadgen: %.0f s, %llu records written (%.0f/s)\n",
                 seconds(now - start_), static_cast<unsigned long long>(sent), rate);
    return;
  }
  const std::string lag_text = lag ? ", lag " + std::to_string(*lag) : std::string();
  std::fprintf(stderr,
               "fraud-loadgen: %.0f s, %llu sent (%.0f/s), %llu acked, %llu errors, "
               "queue %d%s\n",
               seconds(now - start_), static_cast<unsigned long long>(sent), rate,
               static_cast<unsigned long long>(deliveries.acked),
               static_cast<unsigned long long>(deliveries.failed), rd_kafka_outq_len(producer),
               lag_text.c_str());
}

}  // namespace fraud::loadgen
