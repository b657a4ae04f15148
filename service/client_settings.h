#pragma once

#include "service/commit_coordinator.h"
#include "service/config.h"
#include "service/kafka/properties.h"

// The settings of every Kafka client the service makes, and of its commit, as pure functions
// of the configuration and the user's librdkafka properties (--kafka-config, then --kafka):
// no client is made here, so each choice can be read and tested alone. The user's properties
// win where a setting is a default (try_emplace below); the settings exactness depends on
// (transactional.id, idempotence, acks, read_committed, manual offset commits) always win.
// Thread-safety: pure functions.
namespace fraud::service {

// What every client shares: the user's properties, bootstrap.servers and client.id (the
// instance id unless the user named one).
[[nodiscard]] kafka::KafkaProperties commonSettings(const ServiceConfig& config,
                                                    const kafka::KafkaProperties& user);

// The transactional producer: alerts, dead letters, the changelog and offsets in one
// transaction per commit interval.
[[nodiscard]] kafka::KafkaProperties producerSettings(const ServiceConfig& config,
                                                      const kafka::KafkaProperties& common);

// The input consumer of the group.
[[nodiscard]] kafka::KafkaProperties consumerSettings(const ServiceConfig& config,
                                                      const kafka::KafkaProperties& common);

// The commit coordinator's options (all but the clients and collaborators it is given).
[[nodiscard]] CommitCoordinator::Options commitOptions(const ServiceConfig& config);

}  // namespace fraud::service
