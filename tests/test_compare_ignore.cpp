// The comparison's ignore rules on their own: which rule covers a value or a
// missing element, wall-clock times of the replay's run, host configs, and
// the map from recorded broker addresses to the target's.
#include <gtest/gtest.h>

#include "replay/compare_ignore.hpp"

namespace kwire {
namespace {

using SegViews = std::vector<std::string_view>;

TEST(CompareIgnore, DefaultRulesCoverValuesBySubtree) {
  const auto rules = replay::default_ignore_rules();
  const replay::IgnoreRule* r = replay::value_rule(rules, "Fetch", SegViews{"body", "responses", "partitions", "highWatermark"});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->pattern.text, "Fetch:body.responses.partitions.highWatermark");
  r = replay::value_rule(rules, "Fetch", SegViews{"body", "responses", "partitions", "records", "baseOffset"});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->pattern.text, "Fetch:body.responses.partitions.records");
  r = replay::value_rule(rules, "Produce", SegViews{"body", "throttleTimeMs"});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->pattern.text, "**.throttleTimeMs");
  // An error code is never the target's own. Nor is a partition's index,
  // though the partitions Fetch lists are covered for their presence.
  EXPECT_EQ(replay::value_rule(rules, "Fetch", SegViews{"body", "responses", "partitions", "errorCode"}), nullptr);
  EXPECT_EQ(replay::value_rule(rules, "Fetch", SegViews{"body", "responses", "partitions", "partitionIndex"}), nullptr);
}

TEST(CompareIgnore, PresenceRulesCoverTheirArrayExactly) {
  const auto rules = replay::default_ignore_rules();
  const replay::IgnoreRule* r = replay::presence_rule(rules, "Fetch", SegViews{"body", "responses", "partitions"});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->pattern.text, "Fetch:body.responses.partitions");
  EXPECT_TRUE(r->presence_only);
  r = replay::presence_rule(rules, "Fetch", SegViews{"body", "responses"});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->pattern.text, "Fetch:body.responses");
  EXPECT_EQ(replay::presence_rule(rules, "Fetch", SegViews{"body", "responses", "partitions", "abortedTransactions"}), nullptr);
  EXPECT_EQ(replay::presence_rule(rules, "Produce", SegViews{"body", "responses"}), nullptr);
}

TEST(CompareIgnore, FirstMatchingRuleOfHandWrittenOnes) {
  std::vector<replay::IgnoreRule> rules(3);
  std::string error;
  ASSERT_TRUE(replay::parse_pattern("**.items", rules[0].pattern, error));
  rules[0].presence_only = true;
  ASSERT_TRUE(replay::parse_pattern("A:body.items", rules[1].pattern, error));
  ASSERT_TRUE(replay::parse_pattern("**.items", rules[2].pattern, error));
  rules[2].why = "the later one";
  // The presence-only rule is passed over for values.
  EXPECT_EQ(replay::value_rule(rules, "A", SegViews{"body", "items", "x"}), &rules[1]);
  EXPECT_EQ(replay::value_rule(rules, "B", SegViews{"body", "items"}), &rules[2]);
  EXPECT_EQ(replay::presence_rule(rules, "B", SegViews{"body", "items"}), &rules[0]);
  EXPECT_EQ(replay::value_rule(rules, "B", SegViews{"body", "other"}), nullptr);
}

TEST(CompareIgnore, WallClockTimesWithinTheRun) {
  const SegViews start{"body", "transactionStates", "transactionStartTimeMs"};
  const std::string_view api = "DescribeTransactions";
  // The run went from 4,500 to 6,000 ms; a second of slack either side.
  EXPECT_TRUE(replay::run_time(api, start, 1000, 5000, 4500, 6000));
  EXPECT_TRUE(replay::run_time(api, start, 1000, 3500, 4500, 6000));
  EXPECT_FALSE(replay::run_time(api, start, 1000, 3499, 4500, 6000));
  EXPECT_TRUE(replay::run_time(api, start, 1000, 7000, 4500, 6000));
  EXPECT_FALSE(replay::run_time(api, start, 1000, 7001, 4500, 6000));
  EXPECT_TRUE(replay::run_time(api, start, 1000, 7001, 4500, 0));     // still running
  EXPECT_FALSE(replay::run_time(api, start, -1, 5000, 4500, 6000));   // the capture has no time
  EXPECT_FALSE(replay::run_time(api, start, 1000, 5000, 0, 6000));    // the run's start unknown
  EXPECT_FALSE(replay::run_time("ListTransactions", start, 1000, 5000, 4500, 6000));
  EXPECT_FALSE(replay::run_time(api, SegViews{"body", "transactionStates", "transactionTimeoutMs"}, 1000, 5000, 4500, 6000));
}

TEST(CompareIgnore, HostConfigs) {
  const replay::HostConfig* h = replay::host_config("log.dirs");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->endpoints);
  EXPECT_EQ(h->why, "paths on the target's host");
  h = replay::host_config("advertised.listeners");
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->endpoints);
  EXPECT_EQ(replay::host_config("num.partitions"), nullptr);
}

TEST(CompareIgnore, EndpointListsParse) {
  const auto v = replay::parse_endpoints("PLAINTEXT://[::1]:9092,1@ctl:9093,host");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].prefix, "PLAINTEXT://");
  EXPECT_EQ(v[0].host, "::1");
  EXPECT_EQ(v[0].port, 9092);
  EXPECT_EQ(v[1].prefix, "1@");
  EXPECT_EQ(v[1].host, "ctl");
  EXPECT_EQ(v[1].port, 9093);
  EXPECT_EQ(v[2].prefix, "");
  EXPECT_EQ(v[2].host, "host");
  EXPECT_EQ(v[2].port, -1);
}

TEST(CompareIgnore, PortsMapOnlyWhereOneLivePortStandsForThem) {
  replay::EndpointMap two_brokers;
  two_brokers.add("10.0.0.1:9092", "127.0.0.1:19092");
  two_brokers.add("10.0.0.2:9092", "127.0.0.1:29092");
  EXPECT_TRUE(two_brokers.ports().empty());
  EXPECT_EQ(two_brokers.hosts(), (std::map<std::string, std::string>{{"10.0.0.1", "127.0.0.1"}, {"10.0.0.2", "127.0.0.1"}}));

  replay::EndpointMap one_port;
  one_port.add("a:9092", "b:19092");
  one_port.add("c:9092", "b:19092");
  EXPECT_EQ(one_port.ports(), (std::map<uint16_t, uint16_t>{{9092, 19092}}));

  replay::EndpointMap moved;
  moved.add("10.0.0.2:9092", "h1:1");
  moved.add("10.0.0.2:9093", "h2:2");
  EXPECT_TRUE(moved.hosts().empty());  // the host went two ways
}

TEST(CompareIgnore, EndpointsMappedToTheTarget) {
  replay::EndpointMap map;
  map.add("10.0.0.1:9092", "127.0.0.1:19092");
  const std::string listeners = "PLAINTEXT://10.0.0.1:9092,CONTROLLER://10.0.0.1:9093";
  auto ports = map.ports();
  // The controller's port maps to nothing yet, so it stays.
  EXPECT_EQ(replay::map_endpoints(listeners, map, ports), "PLAINTEXT://127.0.0.1:19092,CONTROLLER://10.0.0.1:9093");
  // Once it maps, the host moves with the broker's other address.
  ports[9093] = 19093;
  EXPECT_EQ(replay::map_endpoints(listeners, map, ports), "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093");
}

TEST(CompareIgnore, EndpointsMatchWithTheHostAsWritten) {
  const replay::EndpointMap map;
  const std::map<uint16_t, uint16_t> ports{{9092, 19092}};
  EXPECT_TRUE(replay::endpoints_match("PLAINTEXT://localhost:9092", "PLAINTEXT://localhost:19092", map, ports));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://localhost:9092", "PLAINTEXT://127.0.0.1:19092", map, ports));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://localhost:9092", "SSL://localhost:19092", map, ports));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://localhost:9092", "PLAINTEXT://localhost:9092", map, ports));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://localhost:9092", "PLAINTEXT://localhost:19092,X://h:1", map, ports));
}

TEST(CompareIgnore, ListenerPortsByName) {
  const std::map<std::string, std::string> recorded{{"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"}},
      live{{"listeners", "PLAINTEXT://:19092,CONTROLLER://:19093"}};
  std::map<uint16_t, uint16_t> ports{{9092, 19092}};
  replay::listener_ports(recorded, live, ports);
  EXPECT_EQ(ports, (std::map<uint16_t, uint16_t>{{9092, 19092}, {9093, 19093}}));
  // A live port that already stands for another recorded one is not taken twice.
  std::map<uint16_t, uint16_t> taken{{9092, 19093}};
  replay::listener_ports(recorded, live, taken);
  EXPECT_EQ(taken, (std::map<uint16_t, uint16_t>{{9092, 19093}}));
}

}  // namespace
}  // namespace kwire
