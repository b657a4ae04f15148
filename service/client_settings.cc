#include "service/client_settings.h"

#include "service/transaction_fencer.h"

namespace fraud::service {

kafka::KafkaProperties commonSettings(const ServiceConfig& config,
                                      const kafka::KafkaProperties& user) {
  kafka::KafkaProperties common = user;
  common["bootstrap.servers"] = config.brokers;
  common.try_emplace("client.id", config.instance_id);
  return common;
}

kafka::KafkaProperties producerSettings(const ServiceConfig& config,
                                        const kafka::KafkaProperties& common) {
  kafka::KafkaProperties props = common;
  props["transactional.id"] = transactionalIdOf(config.group_id, config.instance_id);
  props["enable.idempotence"] = "true";
  props["acks"] = "all";
  props.try_emplace("linger.ms", "5");
  props.try_emplace("compression.type", "lz4");
  // A transaction a dead owner left open is aborted by its successor (TransactionFencer); this
  // timeout is the second line, for an owner nobody could name. librdkafka's 60 s, not Kafka
  // Streams' 10 s: a transaction must outlive a broker's outage (a broker kill held a commit
  // 10.4 s in the 3-broker fault test, the soak's broker restart about 45 s), since a
  // coordinator that times a transaction out under its live producer makes that producer's next
  // call fatal.
  props.try_emplace("transaction.timeout.ms", "60000");
  props.try_emplace("queue.buffering.max.messages", "1000000");
  // librdkafka's default (1 GiB) would let the producer queue alone outgrow the pod.
  props.try_emplace("queue.buffering.max.kbytes", "262144");
  return props;
}

kafka::KafkaProperties consumerSettings(const ServiceConfig& config,
                                        const kafka::KafkaProperties& common) {
  kafka::KafkaProperties props = common;
  props["group.id"] = config.group_id;
  props["enable.auto.commit"] = "false";
  props["enable.auto.offset.store"] = "false";
  props["isolation.level"] = "read_committed";
  props["auto.offset.reset"] = config.auto_offset_reset;
  props.try_emplace("partition.assignment.strategy", "cooperative-sticky");
  // librdkafka's defaults (1 MiB a partition a fetch, 100k queued messages) starve a consumer
  // that catches up at hundreds of thousands of records a second. The prefetch queue is bounded
  // by queued.max.messages.kbytes: at librdkafka's 64 MiB it held about 300 MiB of the process
  // (fetch buffers stay whole while any of their records is queued) during a 2 M-record
  // catch-up; at 16 MiB the peak RSS fell from 750-850 to 480 MiB at the same records/s
  // (docs/configuration.md, "Memory").
  props.try_emplace("max.partition.fetch.bytes", "10485760");
  props.try_emplace("queued.min.messages", "1000000");
  props.try_emplace("queued.max.messages.kbytes", "16384");
  if (config.static_membership) props["group.instance.id"] = config.instance_id;
  // The mock cluster holds an empty fetch for all of fetch.wait.max.ms (500 ms) even when records
  // arrive meanwhile (a real broker answers as soon as fetch.min.bytes are there).
  if (config.embedded_kafka) props.try_emplace("fetch.wait.max.ms", "5");
  return props;
}

CommitCoordinator::Options commitOptions(const ServiceConfig& config) {
  CommitCoordinator::Options commit;
  commit.input_topic = config.input_topic;
  commit.changelog_topic = config.changelog_topic;
  commit.owner = config.instance_id;
  commit.commit_interval = std::chrono::milliseconds(config.commit_interval_ms);
  // The mock cluster keeps aborted records: embedded mode persists after every commit.
  commit.checkpoint_interval =
      std::chrono::milliseconds(config.embedded_kafka ? 0 : config.checkpoint_interval_ms);
  commit.cache_pressure_bytes = (config.state.card_cache_mb << 20) / 10 * 8;
  commit.max_held_bytes = static_cast<size_t>(config.max_held_output_mb) << 20;
  commit.commit_offsets_outside_transaction = config.embedded_kafka;
  return commit;
}

}  // namespace fraud::service
