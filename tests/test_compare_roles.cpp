// The comparison's by-role rules on their own: a member's asks matched across
// its heartbeats, sticky values by their effective value, and what a member's
// recorded answers leave in its memory.
#include <gtest/gtest.h>

#include "replay/compare_roles.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

constexpr std::string_view kRequired = "body.topologyDescriptionRequired";

TEST(CompareRoles, WhichFieldsAreByRole) {
  EXPECT_TRUE(replay::listed(replay::sticky_fields(), "ConsumerGroupHeartbeat", "body.assignment"));
  EXPECT_TRUE(replay::listed(replay::sticky_fields(), "StreamsGroupHeartbeat", "body.activeTasks"));
  EXPECT_FALSE(replay::listed(replay::sticky_fields(), "ConsumerGroupHeartbeat", "body.memberEpoch"));
  EXPECT_FALSE(replay::listed(replay::sticky_fields(), "SyncGroup", "body.assignment"));
  EXPECT_TRUE(replay::listed(replay::ask_fields(), "StreamsGroupHeartbeat", kRequired));
  EXPECT_FALSE(replay::listed(replay::ask_fields(), "StreamsGroupHeartbeat", "body.activeTasks"));
  EXPECT_EQ(replay::member_key("7", "A", "body.x"), std::string("7\x1f" "A\x1f" "body.x"));
}

TEST(CompareRoles, TheTargetAsksLaterThenTheCaptureEarlier) {
  replay::StickyMemory m;
  // The capture asks, the target not yet: its back-off has jitter.
  auto v = replay::match_ask(m, "k", true, false);
  EXPECT_TRUE(v.differs);
  EXPECT_EQ(v.recorded, "true");
  EXPECT_EQ(v.live, "false");
  EXPECT_EQ(v.timing, "the target has not asked yet; its back-off has jitter (timing)");
  EXPECT_EQ(m.ask_balance["k"], 1);
  // The target's ask a heartbeat later matches it.
  v = replay::match_ask(m, "k", false, true);
  EXPECT_TRUE(v.differs);
  EXPECT_EQ(v.timing, "the capture asked at an earlier heartbeat (timing)");
  EXPECT_EQ(m.ask_balance["k"], 0);
  // Both ask: nothing to say, nothing owed.
  v = replay::match_ask(m, "k", true, true);
  EXPECT_FALSE(v.differs);
  EXPECT_EQ(m.ask_balance["k"], 0);
}

TEST(CompareRoles, AnAskTheCaptureNeverMakesIsARegression) {
  replay::StickyMemory m;
  auto v = replay::match_ask(m, "k", false, true);
  EXPECT_TRUE(v.differs);
  EXPECT_EQ(v.timing, "");
  EXPECT_EQ(m.ask_balance["k"], -1);
  // The capture's ask that comes later is then the target's earlier one.
  v = replay::match_ask(m, "k", true, false);
  EXPECT_EQ(v.timing, "the target asked at an earlier heartbeat (timing)");
  EXPECT_EQ(m.ask_balance["k"], 0);
}

TEST(CompareRoles, AnAskTheCaptureMakesLaterInTheSession) {
  replay::StickyMemory m;
  m.asks_left["k"] = 1;
  auto v = replay::match_ask(m, "k", false, true);
  EXPECT_EQ(v.timing, "the capture asks at a later heartbeat (timing)");
  // That later recorded ask is compared now: one fewer left.
  v = replay::match_ask(m, "k", true, false);
  EXPECT_EQ(v.timing, "the target asked at an earlier heartbeat (timing)");
  EXPECT_EQ(m.asks_left["k"], 0);
}

TEST(CompareRoles, StickyValuesByTheirEffectiveValue) {
  replay::StickyMemory m;
  auto v = replay::match_sticky(m, "k", "[1]", "[1]", false);
  EXPECT_FALSE(v.differs);
  EXPECT_EQ(m.recorded["k"], "[1]");
  EXPECT_EQ(m.live["k"], "[1]");
  // Null on the capture's side keeps its last value, which the target no longer has.
  v = replay::match_sticky(m, "k", std::nullopt, "[2]", false);
  EXPECT_TRUE(v.differs);
  EXPECT_EQ(v.recorded, "[1]");
  EXPECT_EQ(v.live, "[2]");
  EXPECT_EQ(v.timing, "");
  EXPECT_EQ(m.recorded["k"], "[1]");
  EXPECT_EQ(m.live["k"], "[2]");
  // The capture catches up a heartbeat later: both [2] now.
  v = replay::match_sticky(m, "k", "[2]", std::nullopt, false);
  EXPECT_FALSE(v.differs);
}

TEST(CompareRoles, StickyValuesOneHeartbeatApartOrWaitingForATimer) {
  replay::StickyMemory ahead;
  ahead.next["k"] = "[2]";  // what the member's next recorded answer gives it
  auto v = replay::match_sticky(ahead, "k", "[1]", "[2]", false);
  EXPECT_EQ(v.timing, "one heartbeat earlier or later (timing)");

  replay::StickyMemory behind;
  behind.recorded["k"] = "[2]";  // the value the capture had before this answer
  v = replay::match_sticky(behind, "k", "[3]", "[2]", false);
  EXPECT_EQ(v.timing, "one heartbeat earlier or later (timing)");
  EXPECT_EQ(behind.recorded["k"], "[3]");

  replay::StickyMemory waiting;
  v = replay::match_sticky(waiting, "k", "[1]", std::nullopt, true);
  EXPECT_TRUE(v.differs);
  EXPECT_EQ(v.live, "\"(none yet)\"");
  EXPECT_EQ(v.timing, "the target's assignment waits for a timer (timing)");
}

TEST(CompareRoles, WhatAMembersRecordedAnswersLeave) {
  const ProgramSet& ps = ProgramSet::release();
  // The test heartbeat answer asks for the topology and assigns nothing (null tasks).
  const auto message = test::heartbeat_response(5, "m1", 2);
  const Frame f = test::decoded_response(ps, message, 88, 1);
  ASSERT_TRUE(f.ok());
  replay::StickyMemory m;
  const std::string asks = replay::member_key("m1", "StreamsGroupHeartbeat", kRequired);
  replay::count_recorded_asks(ps, f, "m1", m);
  replay::count_recorded_asks(ps, f, "m1", m);
  EXPECT_EQ(m.asks_left[asks], 2);
  EXPECT_FALSE(replay::asks_alone(ps, f, f));
  // A null assignment in the next answer says nothing of what comes next.
  const std::string active = replay::member_key("m1", "StreamsGroupHeartbeat", "body.activeTasks");
  m.next[active] = "[]";
  replay::sticky_lookahead(ps, f, "m1", m);
  EXPECT_EQ(m.next.count(active), 0u);
  EXPECT_FALSE(replay::timer_pending(ps, f, "StreamsGroupHeartbeat"));
  EXPECT_EQ(replay::share_assigned(ps, f), -1);  // not a share group's answer
  EXPECT_FALSE(replay::assignment_delayed_only_live(ps, f, f));
}

}  // namespace
}  // namespace kwire
