#pragma once

// Compatibility only, while the service core moves to fraud::kafka: the names the stream
// processor, transactional output and changelog restorer use, from service/kafka/. Include the
// service/kafka/*.h headers in new code; this file goes when nothing includes it.
#include "service/kafka/admin.h"
#include "service/kafka/client.h"

namespace fraud::service {
using kafka::GroupMetadata;
using kafka::KafkaConf;
using kafka::KafkaDeleter;
using kafka::KafkaError;
using kafka::KafkaHandle;
using kafka::KafkaMessage;
using kafka::KafkaProperties;
using kafka::KafkaQueue;
using kafka::keyOf;
using kafka::makeKafkaClient;
using kafka::makeKafkaConf;
using kafka::makePartitionList;
using kafka::PartitionList;
using kafka::payloadOf;
using kafka::topicPartitionCount;
}  // namespace fraud::service
