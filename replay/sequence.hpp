// What an idempotent producer guarantees about its batches, kept on replay.
// A broker appends the batches of one producer to one partition in sequence
// order only: a batch whose sequence is not the next one is refused
// (OUT_OF_ORDER_SEQUENCE_NUMBER). When a batch is answered with a retriable
// error, every later batch of that producer and partition already in flight
// is refused too, and Kafka's producer sends them all again in sequence order.
//
// This part reads those batches out of a Produce request and says which of
// two requests must reach the broker first. It knows nothing of connections.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire::replay {

struct ProducerBatch {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::string topic;           // as the request names it: a name, or a topic id (Produce v13+)
  int32_t partition = -1;
  int32_t base_sequence = -1;
};

// The batches of `produce` (a decoded Produce request) that carry a producer
// id and a sequence: those of idempotent and transactional producers.
std::vector<ProducerBatch> producer_batches(const Frame& produce, const ProgramSet& ps);

// Whether some batch of `earlier` comes before some batch of `later` in the
// sequence of one producer (id and epoch) on one partition. Sequences wrap
// at 2^31: a distance below 2^30 forward counts as before.
bool precedes(const std::vector<ProducerBatch>& earlier, const std::vector<ProducerBatch>& later);

// OUT_OF_ORDER_SEQUENCE_NUMBER: what a broker answers a batch whose earlier
// batches it has not appended.
inline constexpr int16_t kOutOfOrderSequence = 45;

}  // namespace kwire::replay
