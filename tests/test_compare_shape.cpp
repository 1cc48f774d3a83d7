// The comparison's shape rules on their own: values written differently that
// are the same, the pairing of struct elements, and what follows from the
// clusters' sizes alone.
#include <gtest/gtest.h>

#include "replay/compare_shape.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

using SegViews = std::vector<std::string_view>;
using Texts = std::vector<std::string>;

TEST(CompareShape, EqualElementsPairFirstThenByIdentity) {
  // Recorded A, B, C; live C, X, A. A and C are equal on both sides; B and X
  // differ but share the identity "2".
  std::vector<bool> taken;
  const auto pair = replay::pair_elements({"A", "B", "C"}, {"C", "X", "A"}, {"1", "2", ""}, {"", "2", ""}, taken);
  EXPECT_EQ(pair, (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(taken, (std::vector<bool>{true, true, true}));
}

TEST(CompareShape, ElementsWithoutIdentityPairByPosition) {
  // No element is equal; the recorded ones have no identity, so they take the
  // live ones left in order. An empty identity matches nothing, not even an
  // empty one.
  std::vector<bool> taken;
  const auto pair = replay::pair_elements({"P", "Q"}, {"R", "S", "T"}, {"", ""}, {"x", "", ""}, taken);
  EXPECT_EQ(pair, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(taken, (std::vector<bool>{true, true, false}));
}

TEST(CompareShape, AnElementWithAnIdentityTheOtherSideLacksStaysAlone) {
  std::vector<bool> taken;
  const auto pair = replay::pair_elements({"P"}, {"Q"}, {"k"}, {"j"}, taken);
  EXPECT_EQ(pair, (std::vector<int64_t>{-1}));
  EXPECT_EQ(taken, (std::vector<bool>{false}));
}

TEST(CompareShape, ReplicaCountsOfASmallerTarget) {
  const replay::ClusterSizes three_to_one{3, 1};
  EXPECT_TRUE(three_to_one.replica_count(3, 1));   // capped at the target's one broker
  EXPECT_TRUE(three_to_one.replica_count(2, 1));
  EXPECT_FALSE(three_to_one.replica_count(3, 2));  // more than the target holds
  EXPECT_FALSE(three_to_one.replica_count(1, 1));  // no difference
  EXPECT_TRUE(three_to_one.broker_list(3, 1));
  EXPECT_FALSE(three_to_one.broker_list(2, 1));    // not every recorded broker
  EXPECT_TRUE(three_to_one.quorum(3, 1));
  EXPECT_FALSE(three_to_one.quorum(3, 3));
  EXPECT_EQ(three_to_one.replicas_why(),
            "shape: a partition has as many replicas as the target holds (at most 1; a broker default fills it)");
  EXPECT_EQ(three_to_one.quorum_why("controller.quorum.voters", 3, 1),
            "shape: controller.quorum.voters lists 1 controller, the capture's 3");
  EXPECT_EQ(three_to_one.replica_config_why("min.insync.replicas"),
            "shape: min.insync.replicas counts replicas, of which the target holds at most 1");
  EXPECT_EQ(three_to_one.brokers_why(), "shape: a broker list names every broker");
}

TEST(CompareShape, ReplicaCountsOfALargerTarget) {
  const replay::ClusterSizes one_to_three{1, 3};
  EXPECT_TRUE(one_to_three.replica_count(1, 3));   // each the whole of its cluster
  EXPECT_FALSE(one_to_three.replica_count(1, 2));
  // A config the one broker capped at 1 where three brokers allow 2.
  EXPECT_TRUE(one_to_three.config_cap(1, 2));
  EXPECT_FALSE(one_to_three.config_cap(2, 3));
  EXPECT_FALSE(one_to_three.config_cap(1, 4));      // more than the target has
}

TEST(CompareShape, SizesAlikeOrUnknownExplainNothing) {
  EXPECT_FALSE((replay::ClusterSizes{3, 3}.replica_count(3, 1)));
  EXPECT_FALSE((replay::ClusterSizes{3, 3}.quorum(3, 1)));
  EXPECT_FALSE((replay::ClusterSizes{0, 1}.replica_count(3, 1)));
  EXPECT_FALSE((replay::ClusterSizes{0, 1}.config_cap(3, 1)));
  EXPECT_FALSE((replay::ClusterSizes{3, 0}.broker_list(3, 1)));
}

TEST(CompareShape, ReplicaConfigsAndCounts) {
  EXPECT_TRUE(replay::replica_config("default.replication.factor"));
  EXPECT_TRUE(replay::replica_config("transaction.state.log.min.isr"));
  EXPECT_TRUE(replay::replica_config("min.insync.replicas"));
  EXPECT_FALSE(replay::replica_config("num.partitions"));
  int64_t v = 0;
  EXPECT_TRUE(replay::parse_count("3", v));
  EXPECT_EQ(v, 3);
  EXPECT_FALSE(replay::parse_count("x", v));
  EXPECT_FALSE(replay::parse_count("", v));
}

TEST(CompareShape, UnorderedValueArraysAndLists) {
  EXPECT_TRUE(replay::unordered_values("ConsumerGroupHeartbeat", SegViews{"body", "assignment", "topicPartitions", "partitions"}));
  EXPECT_TRUE(replay::unordered_values("OffsetFetch", SegViews{"body", "groups", "topics", "partitionIndexes"}));
  // Exactly the array: not a field under it.
  EXPECT_FALSE(replay::unordered_values("Metadata", SegViews{"body", "topics", "partitions", "partitionIndex"}));
  EXPECT_FALSE(replay::unordered_values("Metadata", SegViews{"body", "topics"}));
  EXPECT_EQ(replay::json_list(Texts{"1", "\"a\""}), "[1,\"a\"]");
  EXPECT_EQ(replay::json_list(Texts{}), "[]");
}

TEST(CompareShape, HeartbeatAnswersAsJsonAndSubtrees) {
  const ProgramSet& ps = ProgramSet::release();
  const auto m3 = test::heartbeat_response(1, "m1", 3), again = test::heartbeat_response(2, "m1", 3),
             m4 = test::heartbeat_response(3, "m1", 4);
  const Frame a = test::decoded_response(ps, m3, 88, 1), b = test::decoded_response(ps, again, 88, 1),
              c = test::decoded_response(ps, m4, 88, 1);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // Another correlation id is no difference in the body; another epoch is.
  EXPECT_TRUE(replay::same_subtree(a, a.body, b, b.body));
  EXPECT_FALSE(replay::same_subtree(a, a.body, c, c.body));
  const uint32_t member = a.body + 4, epoch = a.body + 5, required = a.body + 13, active = a.body + 10;
  EXPECT_TRUE(replay::same_leaf(a, member, c, member));
  EXPECT_FALSE(replay::same_leaf(a, epoch, c, epoch));
  EXPECT_EQ(replay::json_value(ps, a, member), "\"m1\"");
  EXPECT_EQ(replay::json_value(ps, c, epoch), "4");
  EXPECT_EQ(replay::json_value(ps, a, required), "true");
  EXPECT_EQ(replay::json_value(ps, a, active), "null");
  EXPECT_EQ(replay::canonical_json(ps, a, member, "StreamsGroupHeartbeat"), "\"m1\"");
  std::string body;
  replay::subtree_json(ps, a, a.body, body);
  EXPECT_EQ(body,
            "{\"throttleTimeMs\":0,\"errorCode\":0,\"errorMessage\":null,\"memberId\":\"m1\",\"memberEpoch\":3,"
            "\"heartbeatIntervalMs\":5000,\"taskOffsetIntervalMs\":30000,\"acceptableRecoveryLag\":10000,"
            "\"status\":null,\"activeTasks\":null,\"standbyTasks\":null,\"warmupTasks\":null,"
            "\"topologyDescriptionRequired\":true,\"endpointInformationEpoch\":0,\"partitionsByUserEndpoint\":null}");
  // The body names a member: its MemberId is what identifies it.
  EXPECT_EQ(replay::element_identity(ps, a, a.body), "\"m1\",");
}

}  // namespace
}  // namespace kwire
