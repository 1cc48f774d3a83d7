// The comparison's node checks on their own: the nodes an answer names must be
// the target's, at the target's endpoints, whatever ids the capture had.
#include <gtest/gtest.h>

#include "replay/compare_nodes.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

using test::Bytes;

// A FindCoordinator v4 answer with one coordinator per (key, node, host:port, error).
struct Coordinator {
  std::string key;
  int node;
  std::string host;
  int port, error;
};
std::vector<uint8_t> coordinators(const std::vector<Coordinator>& cs) {
  Bytes b;
  b.i32(3).tags0();               // correlation id, header tags
  b.i32(0).carr(cs.size());       // ThrottleTimeMs, Coordinators
  for (const auto& c : cs) b.cstr(c.key).i32(c.node).cstr(c.host).i32(c.port).i16(c.error).cnull().tags0();
  b.tags0();
  return b.message();
}

TEST(CompareNodes, ForeignLeadersOfMetadataAnswers) {
  const std::vector<int32_t> target{1, 2};
  EXPECT_TRUE(replay::target_node(target, 2));
  EXPECT_FALSE(replay::target_node(target, 3));
  EXPECT_TRUE(replay::foreign_leader("Metadata", "leaderId", 3, target));
  EXPECT_TRUE(replay::foreign_leader("DescribeTopicPartitions", "leaderId", 3, target));
  EXPECT_FALSE(replay::foreign_leader("Metadata", "leaderId", 2, target));
  EXPECT_FALSE(replay::foreign_leader("Metadata", "leaderId", -1, target));  // no leader
  EXPECT_FALSE(replay::foreign_leader("Metadata", "nodeId", 3, target));
  EXPECT_FALSE(replay::foreign_leader("Fetch", "leaderId", 3, target));
  EXPECT_FALSE(replay::foreign_leader("Metadata", "leaderId", 3, {}));        // the target's nodes unknown
}

TEST(CompareNodes, CoordinatorsMustBeTheTargetsAtItsEndpoints) {
  const ProgramSet& ps = ProgramSet::release();
  const auto message = coordinators({
      {"g1", 1, "localhost", 9092, 0},   // the target's node at its endpoint
      {"g2", 7, "localhost", 9093, 0},   // no node of the target
      {"g3", 2, "localhost", 9999, 0},   // the target's node elsewhere
      {"g4", -1, "", -1, 15},            // no coordinator yet
      {"g5", 9, "h", 1, 15},             // an error: the node named is not an answer
  });
  const Frame f = test::decoded_response(ps, message, 10, 4);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  const std::vector<int32_t> target{1, 2};
  const std::map<int32_t, std::string> at{{1, "localhost:9092"}, {2, "localhost:9093"}};

  std::vector<replay::Difference> out;
  replay::check_target_nodes(ps, f, target, &at, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].path, "body.coordinators[1].nodeId");
  EXPECT_EQ(out[0].recorded, "\"(the target's node)\"");
  EXPECT_EQ(out[0].replayed, "7");
  EXPECT_EQ(out[0].rule, "node 7 is none of the target's brokers");
  EXPECT_FALSE(out[0].ignored);
  EXPECT_EQ(out[1].path, "body.coordinators[2].host");
  EXPECT_EQ(out[1].recorded, "\"localhost:9093\"");
  EXPECT_EQ(out[1].replayed, "\"localhost:9999\"");
  EXPECT_EQ(out[1].rule, "node 2 is at localhost:9093 by the target's Metadata");

  // Without the target's endpoints only the foreign node is a regression;
  // without its nodes nothing is checked.
  out.clear();
  replay::check_target_nodes(ps, f, target, nullptr, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "body.coordinators[1].nodeId");
  out.clear();
  replay::check_target_nodes(ps, f, {}, &at, out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace kwire
