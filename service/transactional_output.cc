#include "service/transactional_output.h"

#include <spdlog/spdlog.h>

namespace fraud::service {
namespace {

constexpr int kOffsetsTimeoutMs = 10'000;
// librdkafka asks commit and abort to take the remaining transaction time (-1): other timeouts
// risk desynchronising its transaction state machine.
constexpr int kRemainingTransactionTime = -1;

std::string errorText(const rd_kafka_error_t* error) { return rd_kafka_error_string(error); }

}  // namespace

TransactionalOutput::TransactionalOutput(rd_kafka_t* producer) : producer_(producer) {}

TransactionalOutput::~TransactionalOutput() {
  if (committer_.joinable()) committer_.join();
}

void TransactionalOutput::send(const std::string& topic, int32_t partition, std::string_view key,
                               std::optional<std::string_view> value,
                               std::initializer_list<Header> headers, int64_t* delivered_offset) {
  if (committing_) {
    HeldRecord& held = held_.emplace_back();
    held.topic = topic;
    held.partition = partition;
    held.key = key;
    if (value) held.value = std::string(*value);
    for (const auto& h : headers) held.headers.emplace_back(h.name, h.value);
    return;
  }
  if (!open_) {
    if (KafkaError e(rd_kafka_begin_transaction(producer_)); e) {
      spdlog::error("begin transaction: {}", errorText(e.get()));
      lost_record_ = true;
      return;
    }
    open_ = true;
    opened_at_ = std::chrono::steady_clock::now();
  }
  rd_kafka_headers_t* kafka_headers = nullptr;
  if (headers.size() > 0) {
    kafka_headers = rd_kafka_headers_new(headers.size());
    for (const auto& h : headers) {
      rd_kafka_header_add(kafka_headers, h.name.data(), static_cast<ssize_t>(h.name.size()),
                          h.value.data(), static_cast<ssize_t>(h.value.size()));
    }
  }
  produce(topic.c_str(), partition, key, value, kafka_headers, delivered_offset);
}

void TransactionalOutput::produce(const char* topic, int32_t partition, std::string_view key,
                                  std::optional<std::string_view> value,
                                  rd_kafka_headers_t* headers, int64_t* delivered_offset) {
  std::vector<rd_kafka_vu_t> fields(5);
  fields[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  fields[0].u.cstr = topic;
  fields[1].vtype = RD_KAFKA_VTYPE_PARTITION;
  fields[1].u.i32 = partition;
  fields[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  fields[2].u.i = RD_KAFKA_MSG_F_COPY;
  fields[3].vtype = RD_KAFKA_VTYPE_KEY;
  fields[3].u.mem = {const_cast<char*>(key.data()), key.size()};
  fields[4].vtype = RD_KAFKA_VTYPE_VALUE;
  fields[4].u.mem = {value ? const_cast<char*>(value->data()) : nullptr, value ? value->size() : 0};
  if (headers != nullptr) {
    fields.emplace_back().vtype = RD_KAFKA_VTYPE_HEADERS;
    fields.back().u.headers = headers;
  }
  if (delivered_offset != nullptr) {
    fields.emplace_back().vtype = RD_KAFKA_VTYPE_OPAQUE;
    fields.back().u.ptr = delivered_offset;
  }
  while (true) {
    KafkaError error(rd_kafka_produceva(producer_, fields.data(), fields.size()));
    const auto err = error ? rd_kafka_error_code(error.get()) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;  // the headers belong to the message now
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      // The broker is slower than we are, or unreachable: wait for deliveries, hold input.
      blocked_ = true;
      rd_kafka_poll(producer_, 100);
      continue;
    }
    if (!lost_record_) spdlog::error("cannot produce to {}: {}", topic, rd_kafka_err2str(err));
    if (headers != nullptr) rd_kafka_headers_destroy(headers);
    lost_record_ = true;  // the transaction cannot commit without it
    return;
  }
}

void TransactionalOutput::startCommit(PartitionList offsets, GroupMetadata group) {
  committing_ = true;
  commit_started_ = std::chrono::steady_clock::now();
  if (lost_record_) {
    std::lock_guard lock(mu_);
    result_ = Result::kAborted;
    return;
  }
  if (!open_) {  // nothing was sent: an empty transaction commits nothing
    std::lock_guard lock(mu_);
    result_ = Result::kCommitted;
    return;
  }
  if (committer_.joinable()) committer_.join();
  committer_ =
      std::thread([this, offsets = std::move(offsets), group = std::move(group)]() mutable {
        runCommit(std::move(offsets), std::move(group));
      });
}

void TransactionalOutput::runCommit(PartitionList offsets, GroupMetadata group) {
  Result result = Result::kCommitted;
  if (offsets->cnt > 0) {
    if (KafkaError e(rd_kafka_send_offsets_to_transaction(producer_, offsets.get(), group.get(),
                                                          kOffsetsTimeoutMs));
        e) {
      spdlog::warn("send offsets to transaction: {}", errorText(e.get()));
      result = rd_kafka_error_is_fatal(e.get()) ? Result::kFatal : Result::kAborted;
    }
  }
  // Commit flushes the transaction's records first; their delivery reports run on this thread.
  while (result == Result::kCommitted) {
    KafkaError e(rd_kafka_commit_transaction(producer_, kRemainingTransactionTime));
    if (!e) break;
    if (rd_kafka_error_is_fatal(e.get())) {
      spdlog::critical("commit transaction: {} (fatal: another instance took over?)",
                       errorText(e.get()));
      result = Result::kFatal;
    } else if (rd_kafka_error_txn_requires_abort(e.get())) {
      spdlog::warn("commit transaction: {}; aborting and reprocessing", errorText(e.get()));
      result = Result::kAborted;
    } else {
      spdlog::warn("commit transaction: {}; retrying", errorText(e.get()));
    }
  }
  std::lock_guard lock(mu_);
  result_ = result;
  done_.notify_all();
}

std::optional<TransactionalOutput::Result> TransactionalOutput::finishCommit(bool wait) {
  if (!committing_) return std::nullopt;
  std::optional<Result> result;
  {
    std::unique_lock lock(mu_);
    if (wait) done_.wait(lock, [this] { return result_.has_value(); });
    if (!result_) return std::nullopt;
    result = std::exchange(result_, std::nullopt);
  }
  if (committer_.joinable()) committer_.join();
  committing_ = false;
  if (*result == Result::kCommitted) {
    last_commit_duration_ = std::chrono::steady_clock::now() - commit_started_;
    open_ = false;
    blocked_ = false;
    for (auto& held : std::exchange(held_, {})) {
      rd_kafka_headers_t* kafka_headers = nullptr;
      if (!held.headers.empty()) kafka_headers = rd_kafka_headers_new(held.headers.size());
      for (const auto& [name, value] : held.headers) {
        rd_kafka_header_add(kafka_headers, name.data(), static_cast<ssize_t>(name.size()),
                            value.data(), static_cast<ssize_t>(value.size()));
      }
      if (!open_) {
        if (KafkaError e(rd_kafka_begin_transaction(producer_)); e) {
          spdlog::error("begin transaction: {}", errorText(e.get()));
          lost_record_ = true;
        }
        open_ = true;
        opened_at_ = std::chrono::steady_clock::now();
      }
      produce(held.topic.c_str(), held.partition, held.key,
              held.value ? std::optional<std::string_view>(*held.value) : std::nullopt,
              kafka_headers, nullptr);
    }
    return result;
  }
  if (*result == Result::kAborted) return abort(/*outputs_failed=*/true);
  return result;
}

TransactionalOutput::Result TransactionalOutput::abort(bool outputs_failed) {
  blocked_ = blocked_ || outputs_failed;
  held_.clear();
  lost_record_ = false;
  committing_ = false;
  if (!open_) return Result::kAborted;
  open_ = false;
  while (true) {
    KafkaError e(rd_kafka_abort_transaction(producer_, kRemainingTransactionTime));
    if (!e) return Result::kAborted;
    if (rd_kafka_error_is_fatal(e.get())) {
      spdlog::critical("abort transaction: {}", errorText(e.get()));
      return Result::kFatal;
    }
    spdlog::warn("abort transaction: {}; retrying", errorText(e.get()));
  }
}

}  // namespace fraud::service
