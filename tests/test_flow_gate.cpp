// FlowGate (kwire record --auto): packets of a connection wait for its
// verdict, within bounds, and everything it drops is counted.
#include <gtest/gtest.h>

#include "recorder/flow_gate.hpp"
#include "recorder/pcap_writer.hpp"

using namespace kwire;

namespace {

struct Written {
  std::vector<uint64_t> numbers;
  FlowGate::Writer writer() {
    return [this](int64_t, std::span<const uint8_t>, uint32_t, uint64_t n) { numbers.push_back(n); };
  }
};

const Endpoint kClient = make_endpoint("10.0.0.1", 40000);
const Endpoint kBroker = make_endpoint("10.0.0.2", 19092);
const Endpoint kOther = make_endpoint("10.0.0.3", 8080);
constexpr int64_t kSecond = 1'000'000'000;

std::vector<uint8_t> bytes(size_t n) { return std::vector<uint8_t>(n, 0xab); }

}  // namespace

TEST(FlowGate, HoldsUntilTheVerdictThenWritesInOrderOrDrops) {
  Written w;
  FlowGate gate({}, w.writer());
  gate.packet(kClient, kBroker, 1, bytes(60), 60, 1);
  gate.packet(kBroker, kClient, 2, bytes(60), 60, 2);
  gate.packet(kClient, kOther, 3, bytes(60), 60, 3);
  EXPECT_TRUE(w.numbers.empty());
  EXPECT_EQ(gate.stats().held_bytes, 180u);
  gate.verdict(kBroker, kClient, true, 4);  // either order of the endpoints
  EXPECT_EQ(w.numbers, (std::vector<uint64_t>{1, 2}));
  gate.packet(kClient, kBroker, 5, bytes(60), 60, 5);
  EXPECT_EQ(w.numbers.back(), 5u);
  gate.verdict(kClient, kOther, false, 6);
  gate.packet(kOther, kClient, 7, bytes(60), 60, 7);
  EXPECT_EQ(w.numbers, (std::vector<uint64_t>{1, 2, 5}));
  EXPECT_EQ(gate.stats().dropped_packets, 2u);
  EXPECT_EQ(gate.stats().kafka_flows, 1u);
  EXPECT_EQ(gate.stats().other_flows, 1u);
  EXPECT_EQ(gate.stats().held_bytes, 0u);
}

TEST(FlowGate, AConnectionOverItsHoldLimitIsEvictedAndCounted) {
  Written w;
  FlowGateLimits limits;
  limits.max_held_per_flow = 1000;
  FlowGate gate(limits, w.writer());
  for (uint64_t n = 1; n <= 4; ++n) gate.packet(kClient, kBroker, static_cast<int64_t>(n), bytes(300), 300, n);
  // The fourth packet would pass 1000 bytes: the three held before it go.
  EXPECT_EQ(gate.stats().evicted_flows, 1u);
  EXPECT_EQ(gate.stats().evicted_packets, 3u);
  EXPECT_EQ(gate.stats().evicted_bytes, 900u);
  gate.verdict(kClient, kBroker, true, 5);
  EXPECT_EQ(w.numbers, (std::vector<uint64_t>{4}));
}

TEST(FlowGate, AllUndecidedConnectionsTogetherStayUnderTheTotal) {
  Written w;
  FlowGateLimits limits;
  limits.max_held_total = 1000;
  FlowGate gate(limits, w.writer());
  for (uint16_t port = 1; port <= 10; ++port)
    gate.packet(make_endpoint("10.0.0.9", port), kBroker, port, bytes(300), 300, port);
  EXPECT_LE(gate.stats().held_bytes, 1000u);
  EXPECT_EQ(gate.stats().evicted_packets + gate.stats().held_bytes / 300, 10u);
}

TEST(FlowGate, IdleUndecidedConnectionsAreEvictedDecidedOnesKept) {
  Written w;
  FlowGateLimits limits;
  limits.idle_ns = 30 * kSecond;
  FlowGate gate(limits, w.writer());
  gate.packet(kClient, kOther, 0, bytes(100), 100, 1);
  gate.packet(kClient, kBroker, 0, bytes(100), 100, 2);
  gate.verdict(kClient, kBroker, true, 0);
  gate.tick(31 * kSecond);
  EXPECT_EQ(gate.stats().evicted_flows, 1u);
  EXPECT_EQ(gate.stats().evicted_packets, 1u);
  // The Kafka connection still writes after a quiet spell.
  gate.packet(kBroker, kClient, 32 * kSecond, bytes(100), 100, 3);
  EXPECT_EQ(w.numbers, (std::vector<uint64_t>{2, 3}));
  // At the end of the capture, what never got a verdict is evicted, counted.
  gate.packet(kOther, kClient, 33 * kSecond, bytes(100), 100, 4);
  gate.finish();
  EXPECT_EQ(gate.stats().evicted_flows, 2u);
}

TEST(FlowGate, ANewConnectionOnTheSameFourTupleWaitsForItsOwnVerdict) {
  Written w;
  FlowGate gate({}, w.writer());
  gate.packet(kClient, kBroker, 1, bytes(60), 60, 1);
  gate.verdict(kClient, kBroker, false, 1);
  gate.ended(kClient, kBroker, 2);
  gate.started(kClient, kBroker, 3);  // the port is reused, by Kafka this time
  gate.packet(kClient, kBroker, 3, bytes(60), 60, 2);
  gate.verdict(kClient, kBroker, true, 4);
  EXPECT_EQ(w.numbers, (std::vector<uint64_t>{2}));
  EXPECT_EQ(gate.stats().dropped_packets, 1u);
}
