#include "service/kafka/library_quirks.h"

#include <librdkafka/rdkafka.h>

namespace fraud::kafka {
namespace {

// rd_kafka_version()'s encoding: 0xMMmmrrpp, pp = 0xff for a final release.
constexpr int kVersion2_8_0 = 0x020800ff;

}  // namespace

bool offsetFetchNeedsAGroupClient() { return rd_kafka_version() < kVersion2_8_0; }

}  // namespace fraud::kafka
