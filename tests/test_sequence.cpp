// An idempotent producer's batches in a Produce request (replay/sequence.hpp),
// read from requests built byte by byte here, and the order among them.
#include <gtest/gtest.h>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/records.hpp"
#include "replay/sequence.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

using test::Bytes;

const ProgramSet& ps() { return ProgramSet::release(); }

std::vector<uint8_t> batch(int64_t pid, int16_t epoch, int32_t seq, int records = 1) {
  BatchSpec s;
  s.base_timestamp = 1'795'910'400'000;
  s.producer_id = pid, s.producer_epoch = epoch, s.base_sequence = seq;
  for (int i = 0; i < records; ++i) s.records.push_back(RecordSpec{i, "k", "v", {}});
  return encode_record_batch(s);
}

// Produce v11 to `topic`: one batch per partition, in the order given.
std::vector<uint8_t> produce(const std::string& topic, const std::vector<std::pair<int, std::vector<uint8_t>>>& parts) {
  Bytes b = test::request_header_v2(0, 11, 1);
  b.cnull().i16(-1).i32(30000).carr(1).cstr(topic).carr(parts.size());
  for (const auto& [p, records] : parts) b.i32(p).cbytes(records).tags0();
  b.tags0().tags0();
  return b.message();
}

std::vector<replay::ProducerBatch> batches_of(const std::vector<uint8_t>& bytes) {
  FrameDecoder d(ps());
  d.set_nested(false);  // as replay decodes
  Frame f;
  d.decode_request(bytes, f);
  EXPECT_TRUE(f.ok());
  return replay::producer_batches(f, ps());
}

TEST(ProducerSequence, BatchesNameTheirProducerPartitionAndSequence) {
  const auto b = batches_of(produce("orders", {{0, batch(4242, 3, 10, 5)}, {2, batch(4242, 3, 0)}}));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].producer_id, 4242);
  EXPECT_EQ(b[0].producer_epoch, 3);
  EXPECT_EQ(b[0].topic, "orders");
  EXPECT_EQ(b[0].partition, 0);
  EXPECT_EQ(b[0].base_sequence, 10);
  EXPECT_EQ(b[1].partition, 2);
  EXPECT_EQ(b[1].base_sequence, 0);
  // A producer that is not idempotent (id -1, sequence -1) has no sequence to keep.
  EXPECT_TRUE(batches_of(produce("orders", {{0, batch(-1, -1, -1)}})).empty());
}

TEST(ProducerSequence, AnEarlierSequenceOfTheSameProducerAndPartitionGoesFirst) {
  const auto first = batches_of(produce("orders", {{0, batch(7, 0, 0, 5)}}));
  const auto second = batches_of(produce("orders", {{0, batch(7, 0, 5, 5)}}));
  EXPECT_TRUE(replay::precedes(first, second));
  EXPECT_FALSE(replay::precedes(second, first));
  EXPECT_FALSE(replay::precedes(first, first));
  // Another partition, producer, epoch or topic: no order between them.
  EXPECT_FALSE(replay::precedes(first, batches_of(produce("orders", {{1, batch(7, 0, 5)}}))));
  EXPECT_FALSE(replay::precedes(first, batches_of(produce("orders", {{0, batch(8, 0, 5)}}))));
  EXPECT_FALSE(replay::precedes(first, batches_of(produce("orders", {{0, batch(7, 1, 5)}}))));
  EXPECT_FALSE(replay::precedes(first, batches_of(produce("other", {{0, batch(7, 0, 5)}}))));
  // A request with batches for two partitions goes after the earlier batch of either.
  EXPECT_TRUE(replay::precedes(first, batches_of(produce("orders", {{1, batch(7, 0, 0)}, {0, batch(7, 0, 5)}}))));
  // Sequences wrap at 2^31: 2147483645 comes before 2.
  EXPECT_TRUE(replay::precedes(batches_of(produce("orders", {{0, batch(7, 0, 2147483645)}})),
                               batches_of(produce("orders", {{0, batch(7, 0, 2)}}))));
  EXPECT_FALSE(replay::precedes(batches_of(produce("orders", {{0, batch(7, 0, 2)}})),
                                batches_of(produce("orders", {{0, batch(7, 0, 2147483645)}}))));
}

}  // namespace
}  // namespace kwire
