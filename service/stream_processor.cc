#include "service/stream_processor.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cstdlib>

#include "detectors/partitioner.h"
#include "service/client_settings.h"
#include "service/dead_letter.h"
#include "service/kafka/wall_clock.h"
#include "state/card_state_codec.h"

namespace fraud::service {
namespace {

constexpr auto kOwnersRefresh = std::chrono::seconds(5);
// The fencer's admin calls and init_transactions.
constexpr int kFencingTimeoutMs = 30'000;
constexpr size_t kDefaultMessageMaxBytes = 1'000'000;  // librdkafka's message.max.bytes
// How long a commit waits for the immediate alerts sent before it to be acknowledged (else it
// aborts).
constexpr int kAlertsFlushTimeoutMs = 30'000;

// A cheap clock for per-record lateness and detected_at: a few milliseconds of resolution is
// plenty.
using kafka::coarseWallClockMs;

size_t propertyOr(const kafka::KafkaProperties& properties, const std::string& name,
                  size_t fallback) {
  const auto it = properties.find(name);
  if (it == properties.end()) return fallback;
  size_t value = 0;
  const auto& text = it->second;
  if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc()) {
    return fallback;
  }
  return value;
}

}  // namespace

StreamProcessor::StreamProcessor(const ServiceConfig& config, kafka::KafkaProperties kafka,
                                 const detectors::CardHasher& hasher, state::StateDb& db,
                                 ServiceMetrics& metrics)
    : config_(config),
      kafka_(std::move(kafka)),
      hasher_(hasher),
      db_(db),
      metrics_(metrics),
      query_(config_, hasher, local_state_) {}

StreamProcessor::~StreamProcessor() {
  if (standby_restorer_) standby_restorer_->stop();
  if (restorer_) restorer_->stop();
}

base::Status StreamProcessor::start() {
  const kafka::KafkaProperties common = commonSettings(config_, kafka_);
  const kafka::KafkaProperties producer_props = producerSettings(config_, common);
  if (auto e = startAdmin(common, producer_props); !e.ok()) return e;
  if (auto e = startOutputs(common, producer_props); !e.ok()) return e;
  if (auto e = startInput(common, consumerSettings(config_, common)); !e.ok()) return e;
  startStreamThread();
  return {};
}

base::Status StreamProcessor::startAdmin(const kafka::KafkaProperties& common,
                                         const kafka::KafkaProperties& producer_props) {
  if (auto conf = kafka::makeKafkaConf(producer_props); !conf) {
    return conf.status().withPrefix("producer configuration: ");
  }
  // Admin requests go through a client of their own: librdkafka 2.0.2's main thread can stall
  // a transactional producer's transaction calls behind a slow admin request (seen against
  // the mock cluster), and the owner map is refreshed every few seconds.
  auto admin_conf = kafka::makeKafkaConf(common);
  if (!admin_conf) return admin_conf.status().withPrefix("admin client configuration: ");
  auto admin_client = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*admin_conf));
  if (!admin_client) return admin_client.status().withPrefix("admin client: ");
  admin_client_ = std::move(*admin_client);
  admin_ = std::make_unique<TopicAdmin>(admin_client_.get(), config_);
  if (auto e = admin_->checkTopics(); !e.ok()) return e;
  if (auto e = startFencer(common, producer_props); !e.ok()) return e;
  return checkRecordLimits(
      propertyOr(producer_props, "message.max.bytes", kDefaultMessageMaxBytes));
}

base::Status StreamProcessor::startOutputs(const kafka::KafkaProperties& common,
                                           const kafka::KafkaProperties& producer_props) {
  producer_ = std::make_unique<TransactionalProducer>(
      producer_props,
      std::vector<std::string>{config_.alerts_topic, config_.dlq_topic, config_.changelog_topic});
  if (auto e = producer_->start(); !e.ok()) return e;
  // The consumer comes later (startInput()); it exists before the first commit.
  output_ = std::make_unique<TransactionalOutput>(producer_->get(), [this] {
    return kafka::GroupMetadata(rd_kafka_consumer_group_metadata(consumer_.get()));
  });
  prometheus::Histogram* checkpoint_write = &metrics_.checkpoint_write;
  db_.setWriteObserver([checkpoint_write](double seconds) { checkpoint_write->Observe(seconds); });
  if (config_.alert_delivery != AlertDelivery::kImmediate) {
    output_->timeRecordsOf(config_.alerts_topic, metrics_.stage_commit_wait, metrics_.stage_commit);
    return {};
  }
  auto alerts_output = ImmediateAlertOutput::create(
      common, config_.alerts_topic, {&metrics_.stage_delivery, &metrics_.alert_delivery_failures});
  if (!alerts_output) return alerts_output.status().withPrefix("alert producer: ");
  alerts_ = std::move(*alerts_output);
  alerts_->warmUp();
  ImmediateAlertOutput* alerts = alerts_.get();
  // No input offset commits past an alert the broker has not acknowledged.
  output_->setCommitPrecondition(
      [alerts] { return alerts->flushForCommit(kAlertsFlushTimeoutMs); });
  return {};
}

base::Status StreamProcessor::startInput(const kafka::KafkaProperties& common,
                                         const kafka::KafkaProperties& consumer_props) {
  auto consumer_conf = kafka::makeKafkaConf(consumer_props);
  if (!consumer_conf) return consumer_conf.status().withPrefix("consumer configuration: ");
  rd_kafka_conf_set_rebalance_cb(consumer_conf->get(), &StreamProcessor::onRebalance);
  rd_kafka_conf_set_opaque(consumer_conf->get(), this);
  auto consumer = kafka::makeKafkaClient(RD_KAFKA_CONSUMER, std::move(*consumer_conf));
  if (!consumer) return consumer.status().withPrefix("consumer: ");
  consumer_ = std::move(*consumer);
  // Every event (rebalances included) then reaches rd_kafka_consumer_poll(). It fails only for a
  // client without a consumer group, which a consumer with group.id is not.
  if (const auto err = rd_kafka_poll_set_consumer(consumer_.get());
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return base::Status::failed(std::string("consumer: ") + rd_kafka_err2str(err));
  }

  restorer_ = std::make_unique<ChangelogRestorer>(
      common, config_.changelog_topic, db_,
      ChangelogRestorer::Options{ChangelogRestorer::Role::kActive, &leases_});
  if (auto e = restorer_->start(); !e.ok()) return e;
  input_ =
      std::make_unique<KafkaInput>(consumer_.get(), config_.input_topic, config_.auto_offset_reset);
  detectors::PipelineOptions pipeline;
  pipeline.max_future_skew_ms = config_.max_future_skew_ms;
  pipeline.detected_at_ms = &coarseWallClockMs;
  pipeline_ = std::make_unique<detectors::RecordPipeline>(pipeline, hasher_);
  context_ = std::make_unique<TaskContext>(TaskContext{config_, *output_, *pipeline_, interval_,
                                                       max_dead_letter_bytes_, &coarseWallClockMs,
                                                       alerts_.get()});
  context_->lateness = &query_.lateness();
  context_->recent_alerts = &query_.recentAlertRing();
  // docs/rule.md §9: each record's key checked against the partition it is in, with the
  // producers' partitioner and the partition count found at start (as the card lookups use).
  context_->input_partitioning = detectors::TopicPartitioning{
      detectors::parsePartitioner(config_.partitioner).value_or(detectors::Partitioner::kCrc32),
      admin_->inputPartitions()};
  metrics_.exposeMisrouted(config_.input_topic, admin_->inputPartitions());
  query_.lateness().publishTo(metrics_.shared_registry);
  tasks_ = std::make_unique<TaskManager>(*context_, local_state_, *input_, *restorer_);
  return startStandbys(common);
}

void StreamProcessor::startStreamThread() {
  rd_kafka_t* consumer = consumer_.get();
  commits_ = std::make_unique<CommitCoordinator>(
      commitOptions(config_), *output_, *tasks_,
      [consumer](const InputOffsets& offsets) {
        const auto list = TransactionalOutput::partitionList(offsets);
        if (const auto err = rd_kafka_commit(consumer, list.get(), /*async=*/1)) {
          spdlog::debug("offsets outside the transaction: {}", rd_kafka_err2str(err));
        }
      },
      [this] { return db_.cachedBytes(); }, interval_, &metrics_, Clock::real());
  recovery_ = std::make_unique<ProducerRecovery>([this] { return replaceProducers(); },
                                                 &metrics_.producer_recoveries, Clock::real());
  rebalances_ = std::make_unique<RebalanceListener>(*input_, *tasks_, *commits_, query_, metrics_,
                                                    fencer_.get());
  thread_ = std::make_unique<StreamThread>(
      config_, StreamThread::Clients{input_.get(), producer_.get(), alerts_.get()}, *tasks_,
      *commits_, *rebalances_, interval_, *restorer_, query_, local_state_, metrics_, Clock::real(),
      recovery_.get());
  query_.attach(*tasks_, *admin_, admin_->inputPartitions());
  // The mock cluster answers DescribeConsumerGroups in a way that wedges librdkafka 2.0.2's
  // main thread (and then rd_kafka_destroy()); an embedded run has one member anyway.
  if (!config_.embedded_kafka) admin_->startOwnerRefresh(kOwnersRefresh);
}

base::Status StreamProcessor::replaceProducers() {
  output_->detachProducer();
  if (alerts_ && alerts_->failed()) {
    if (auto e = alerts_->restart(); !e.ok()) return e.withPrefix("alert producer: ");
  }
  if (auto e = producer_->restart(); !e.ok()) return e;
  output_->attachProducer(producer_->get());
  return {};
}

base::Status StreamProcessor::startStandbys(const kafka::KafkaProperties& common) {
  if (config_.standby_replicas == 0) return {};
  // The placement follows the group's owner map, which the embedded cluster cannot describe
  // (and an embedded run has one member anyway).
  if (config_.embedded_kafka) {
    spdlog::warn("--standby-replicas: no standby copies with the embedded cluster (one member)");
    return {};
  }
  standby_restorer_ = std::make_unique<ChangelogRestorer>(
      common, config_.changelog_topic, db_,
      ChangelogRestorer::Options{ChangelogRestorer::Role::kStandby, &leases_});
  if (auto e = standby_restorer_->start(); !e.ok()) return e.withPrefix("standby ");
  StandbyReplicas::Options options;
  options.replicas = config_.standby_replicas;
  options.self = common.at("client.id");  // how the owner map names members
  options.interval = std::chrono::milliseconds(config_.standby_interval_ms);
  TopicAdmin* admin = admin_.get();
  standbys_ = std::make_unique<StandbyReplicas>(
      options, *standby_restorer_, [admin] { return admin->owners(); }, Clock::real());
  tasks_->setStandbys(standbys_.get());
  query_.attachStandbys(*standbys_);
  spdlog::info("keeping {} standby cop{} of partitions owned elsewhere, caught up every {} ms",
               config_.standby_replicas, config_.standby_replicas == 1 ? "y" : "ies",
               config_.standby_interval_ms);
  return {};
}

base::Status StreamProcessor::startFencer(const kafka::KafkaProperties& common,
                                          const kafka::KafkaProperties& producer_props) {
  const std::string& client_id = common.at("client.id");
  // The mock cluster answers DescribeConsumerGroups in a way that wedges librdkafka 2.0.2, and
  // an embedded run has one member anyway.
  if (config_.embedded_kafka) return {};
  // Members are told apart by group.instance.id, else by client.id: with neither naming the
  // instance, a live member could not be told from a departed one, and nobody is fenced.
  const bool client_id_is_instance = client_id == config_.instance_id;
  if (!config_.static_membership && !client_id_is_instance) {
    spdlog::warn(
        "kafka client.id {} is not the instance id and membership is not static: departed owners "
        "are not fenced (a transaction a dead owner left open ends at transaction.timeout.ms)",
        client_id);
    return {};
  }
  TransactionFencer::Options options;
  options.group_id = config_.group_id;
  options.input_topic = config_.input_topic;
  options.self = config_.instance_id;
  kafka::KafkaProperties props = producer_props;
  props.erase("transactional.id");
  TopicAdmin* admin = admin_.get();
  std::function<std::optional<std::string>(int32_t)> previous_owner;
  if (client_id_is_instance) previous_owner = [admin](int32_t p) { return admin->ownerOf(p); };
  // Not admin_client_: reading the group's committed offsets needs a client with a consumer
  // group (kafka::makeGroupAdminClient says why).
  auto fencer_client = kafka::makeGroupAdminClient(common, config_.group_id);
  if (!fencer_client) return fencer_client.status().withPrefix("fencer client: ");
  fencer_client_ = std::move(*fencer_client);
  auto* fenced = &metrics_.fenced_owners;
  fencer_ = std::make_unique<TransactionFencer>(
      options,
      std::make_unique<KafkaFencingCluster>(fencer_client_.get(), std::move(props),
                                            config_.group_id, config_.input_topic,
                                            kFencingTimeoutMs),
      std::move(previous_owner), [fenced](const std::string&, TransactionFencer::Result result) {
        const char* label = result == TransactionFencer::Result::kFenced   ? "ok"
                            : result == TransactionFencer::Result::kFailed ? "failed"
                                                                           : "rejoined";
        fenced->Add({{"result", label}}).Increment();
      });
  return {};
}

base::Status StreamProcessor::checkRecordLimits(size_t producer_limit) {
  // A dead letter is cut to the smaller of the producer's and the topic's limit; a card's
  // changelog record cannot be cut, so the largest one must fit from the start.
  // (The mock cluster does not answer DescribeConfigs: an embedded run takes the producer's.)
  auto topicLimit = [&](const std::string& topic) {
    if (config_.embedded_kafka) return producer_limit;
    return std::min(producer_limit, admin_->maxMessageBytes(topic).value_or(producer_limit));
  };
  const size_t dlq_limit = topicLimit(config_.dlq_topic);
  max_dead_letter_bytes_ = dlq_limit;
  const size_t changelog_limit = topicLimit(config_.changelog_topic);
  const size_t largest = state::maxEncodedCardStateBytes(config_.detector.max_events) +
                         detectors::CardRef{}.bytes.size();
  if (largest + kDeadLetterReserveBytes > changelog_limit) {
    return base::Status::invalidArgument(
        "--max-events " + std::to_string(config_.detector.max_events) +
        ": one card's changelog record can reach " + std::to_string(largest) + " bytes, over the " +
        std::to_string(changelog_limit) +
        "-byte record limit (the producer's message.max.bytes and the changelog topic's "
        "max.message.bytes, the smaller); lower --max-events or raise both limits");
  }
  spdlog::info("record limits: dead letters {} bytes, changelog {} bytes (largest card state {})",
               dlq_limit, changelog_limit, largest);
  return {};
}

int StreamProcessor::run() {
  if (!thread_) return 1;
  return thread_->run(stop_requested_);
}

void StreamProcessor::onRebalance(rd_kafka_t* consumer, rd_kafka_resp_err_t err,
                                  rd_kafka_topic_partition_list_t* partitions, void* opaque) {
  auto* self = static_cast<StreamProcessor*>(opaque);
  if (self->thread_) {
    self->thread_->rebalance(err, partitions);
    return;
  }
  // Not started (start() failed): take nothing.
  (void)err;
  (void)partitions;
  rd_kafka_assign(consumer, nullptr);
}

}  // namespace fraud::service
