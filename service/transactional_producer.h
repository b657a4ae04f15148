#pragma once

#include <optional>
#include <string>
#include <vector>

#include "service/kafka/client.h"

namespace fraud::service {

// The transactional producer's life (Kafka Streams' StreamsProducer): made from the producer
// properties (transactional.id among them) with TransactionalOutput's delivery reports, its
// transactions initialised and its output topics' leaders learnt; and, after a fatal error,
// made again with the same transactional.id (restart()). Initialising transactions under the
// same id bumps the producer epoch: the broker aborts whatever the failed producer left open,
// and that producer, were it still alive, could never commit again.
//
// Thread-safety: every method on one thread (the ingest thread, or start() before it runs),
// and restart() only while nothing uses the producer (no commit in flight, its queue purged by
// TransactionalOutput::detachProducer()). get() may be read by other threads only through an
// owner that orders it with restart() (TransactionalOutput takes it under its lock).
class TransactionalProducer {
 public:
  // `warm_topics`: topics whose partition leaders the producer learns at once, not inside its
  // first transactions.
  TransactionalProducer(kafka::KafkaProperties properties, std::vector<std::string> warm_topics,
                        int init_timeout_ms = 30'000);

  // Creates the producer and initialises transactions (a retriable error retried for up to
  // `init_timeout_ms` in all); an error when either fails.
  [[nodiscard]] base::Status start();
  // Destroys the current producer and starts a new one as start() does; an error (and no
  // producer: get() is null) when that fails.
  [[nodiscard]] base::Status restart();

  // The producer; null before start() and after a failed restart().
  [[nodiscard]] rd_kafka_t* get() const { return handle_.get(); }
  // librdkafka's fatal error on the producer ("NAME: reason"), if it has one (else ok).
  [[nodiscard]] base::Status fatalError() const;
  // The code of that fatal error; RD_KAFKA_RESP_ERR_NO_ERROR without one.
  [[nodiscard]] rd_kafka_resp_err_t fatalCode() const;

 private:
  kafka::KafkaProperties properties_;
  std::vector<std::string> warm_topics_;
  int init_timeout_ms_;
  kafka::KafkaHandle handle_;
};

}  // namespace fraud::service
