// The comparison's paths on their own: how a walk writes where it is, how
// rules name fields, and the paths of a decoded answer.
#include <gtest/gtest.h>

#include "replay/compare_paths.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

using SegViews = std::vector<std::string_view>;

TEST(ComparePaths, CursorWritesIndicesButMatchesWithout) {
  replay::PathCursor c;
  EXPECT_EQ(c.text(), "");
  EXPECT_EQ(c.last(), "");
  {
    replay::PathCursor::Step body(c, "body");
    replay::PathCursor::Step results(c, "results");
    {
      replay::PathCursor::Step index(c, "[+2]", true);
      replay::PathCursor::Step code(c, "errorCode");
      EXPECT_EQ(c.text(), "body.results[+2].errorCode");
      EXPECT_EQ(c.segments(), (SegViews{"body", "results", "errorCode"}));
      EXPECT_EQ(c.last(), "errorCode");
    }
    // The steps taken inside are undone, the index with them.
    EXPECT_EQ(c.text(), "body.results");
    EXPECT_EQ(c.segments(), (SegViews{"body", "results"}));
    EXPECT_EQ(c.last(), "results");
  }
  EXPECT_EQ(c.text(), "");
  EXPECT_TRUE(c.segments().empty());
}

TEST(ComparePaths, PlainPathDropsIndices) {
  EXPECT_EQ(replay::plain_path("body.responses[0].partitions[+1].errorCode"), "body.responses.partitions.errorCode");
  EXPECT_EQ(replay::plain_path("body.throttleTimeMs"), "body.throttleTimeMs");
  EXPECT_EQ(replay::plain_path("body.a[12]"), "body.a");
  // An unclosed index ends the path there.
  EXPECT_EQ(replay::plain_path("body.a[0.b"), "body.a");
}

TEST(ComparePaths, ExactlyIsTheFieldAndNotWhatIsUnderIt) {
  replay::PathPattern p;
  std::string error;
  ASSERT_TRUE(replay::parse_pattern("**.partitions", p, error)) << error;
  EXPECT_EQ(p.api, "");
  EXPECT_EQ(p.segments, (std::vector<std::string>{"**", "partitions"}));
  EXPECT_EQ(p.text, "**.partitions");
  const SegViews at{"body", "topics", "partitions"};
  const SegViews under{"body", "topics", "partitions", "partitionIndex"};
  EXPECT_TRUE(p.matches_exactly("Metadata", at));
  EXPECT_TRUE(p.matches("Metadata", at));
  EXPECT_FALSE(p.matches_exactly("Metadata", under));
  EXPECT_TRUE(p.matches("Metadata", under));
  EXPECT_FALSE(p.matches("Metadata", SegViews{"body", "topics"}));
}

TEST(ComparePaths, DoubleStarInTheMiddleAndSingleCharacterWildcards) {
  replay::PathPattern p;
  std::string error;
  ASSERT_TRUE(replay::parse_pattern("Fetch:body.**.error?ode", p, error)) << error;
  EXPECT_EQ(p.api, "Fetch");
  EXPECT_EQ(p.segments, (std::vector<std::string>{"body", "**", "error?ode"}));
  EXPECT_TRUE(p.matches_exactly("Fetch", SegViews{"body", "errorCode"}));  // ** is also no segment
  EXPECT_TRUE(p.matches_exactly("Fetch", SegViews{"body", "responses", "partitions", "errorCode"}));
  EXPECT_FALSE(p.matches_exactly("Fetch", SegViews{"body", "responses", "errorCodes"}));
  EXPECT_FALSE(p.matches_exactly("Produce", SegViews{"body", "errorCode"}));
  EXPECT_FALSE(p.matches_exactly("Fetch", SegViews{"header", "errorCode"}));
}

TEST(ComparePaths, PatternTableReadsPairs) {
  struct Rule {
    replay::PathPattern pattern;
    std::string why;
  };
  const auto rules = replay::pattern_table<Rule>({{"A:body.x", "one"}, {"**.y[0].z", "two"}});
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].pattern.api, "A");
  EXPECT_EQ(rules[0].pattern.segments, (std::vector<std::string>{"body", "x"}));
  EXPECT_EQ(rules[0].why, "one");
  EXPECT_EQ(rules[1].pattern.api, "");
  EXPECT_EQ(rules[1].pattern.segments, (std::vector<std::string>{"**", "y", "z"}));
  EXPECT_EQ(rules[1].pattern.text, "**.y[0].z");
  EXPECT_EQ(rules[1].why, "two");
}

TEST(ComparePaths, EachPathOfAHeartbeatAnswer) {
  // StreamsGroupHeartbeat v1: fifteen fields at the top of the body, the
  // arrays among them null, so nothing under them.
  const auto message = test::heartbeat_response(9, "m1", 4);
  const Frame f = test::decoded_response(ProgramSet::release(), message, 88, 1);
  ASSERT_TRUE(f.ok());
  std::vector<std::string> paths;
  std::string path = "body";
  std::vector<std::string> segs{"body"};
  const Node* epoch = nullptr;
  replay::each_path(ProgramSet::release(), f, f.body, path, segs,
                    [&](uint32_t node, const std::string& p, const std::vector<std::string>& s) {
                      paths.push_back(p);
                      EXPECT_EQ(s.size(), 2u) << p;
                      if (p == "body.memberEpoch") epoch = &f.nodes[node];
                    });
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "body.throttleTimeMs", "body.errorCode", "body.errorMessage", "body.memberId",
                       "body.memberEpoch", "body.heartbeatIntervalMs", "body.taskOffsetIntervalMs",
                       "body.acceptableRecoveryLag", "body.status", "body.activeTasks", "body.standbyTasks",
                       "body.warmupTasks", "body.topologyDescriptionRequired", "body.endpointInformationEpoch",
                       "body.partitionsByUserEndpoint"}));
  ASSERT_NE(epoch, nullptr);
  EXPECT_EQ(epoch->v.i, 4);
  // The walk leaves the path and segments as it found them.
  EXPECT_EQ(path, "body");
  EXPECT_EQ(segs, (std::vector<std::string>{"body"}));
  EXPECT_EQ(replay::field_name(ProgramSet::release(), f, f.body + 4), "memberId");
}

}  // namespace
}  // namespace kwire
