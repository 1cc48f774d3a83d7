#include "replay/sequence.hpp"

#include "replay/routing.hpp"

namespace kwire::replay {

std::vector<ProducerBatch> producer_batches(const Frame& f, const ProgramSet& ps) {
  std::vector<ProducerBatch> out;
  if (!f.program || f.program->api_name != "Produce") return out;
  for (const PartitionSlot& slot : partition_slots(f, ps)) {
    for (uint32_t c : Children(f, slot.element)) {
      if (f.nodes[c].type != WireType::Records) continue;
      for (uint32_t b : Children(f, c)) {
        if (f.nodes[b].desc != kDescRecordBatch) continue;
        ProducerBatch pb;
        pb.topic = slot.ref.topic;
        pb.partition = slot.ref.partition;
        for (uint32_t k : Children(f, b)) {
          const Node& n = f.nodes[k];
          if (n.desc == kDescProducerId) pb.producer_id = n.v.i;
          else if (n.desc == kDescProducerEpoch) pb.producer_epoch = static_cast<int16_t>(n.v.i);
          else if (n.desc == kDescBaseSequence) pb.base_sequence = static_cast<int32_t>(n.v.i);
        }
        if (pb.producer_id >= 0 && pb.base_sequence >= 0) out.push_back(std::move(pb));
      }
    }
  }
  return out;
}

bool precedes(const std::vector<ProducerBatch>& earlier, const std::vector<ProducerBatch>& later) {
  for (const ProducerBatch& a : earlier)
    for (const ProducerBatch& b : later) {
      if (a.producer_id != b.producer_id || a.producer_epoch != b.producer_epoch || a.partition != b.partition ||
          a.topic != b.topic)
        continue;
      const uint32_t ahead = static_cast<uint32_t>(b.base_sequence - a.base_sequence) & 0x7fffffffu;
      if (ahead != 0 && ahead < (1u << 30)) return true;
    }
  return false;
}

}  // namespace kwire::replay
