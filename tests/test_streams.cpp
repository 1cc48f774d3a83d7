// kwire streams: the streams-group model against hand-built heartbeats whose
// meaning is worked out by hand, and `kwire streams` on the committed
// captures against a different view of the same bytes (`kwire decode -T
// json`) and the facts of each scenario (captures/MANIFEST.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dissector/protocol/decoder.hpp"
#include "streams/streams_model.hpp"
#include "streams/streams_report.hpp"
#include "tests/test_support.hpp"

namespace {

using nlohmann::json;
using kwire::test::Bytes;

// ---------------------------------------------------------------------------
// Hand-built exchanges, fed to the model as KafkaSessions would.

struct Tasks {
  std::string sub;
  std::vector<int> partitions;
};

std::vector<uint8_t> hb_request(int corr, const std::string& member, int epoch) {
  Bytes b = kwire::test::request_header_v2(88, 1, corr, "app-" + member);
  b.cstr("g").cstr(member).i32(epoch).i32(0)  // GroupId, MemberId, MemberEpoch, EndpointInformationEpoch
      .cnull().cnull().i32(-1)                // InstanceId, RackId, RebalanceTimeoutMs
      .i8(-1)                                 // Topology: null
      .cnull().cnull().cnull()                // Active/Standby/WarmupTasks
      .cstr("process-" + member).i8(-1).cnull().cnull().cnull()  // ProcessId, UserEndpoint, ClientTags, TaskOffsets, TaskEndOffsets
      .i8(0).tags0();                         // ShutdownApplication
  return b.message();
}

void task_list(Bytes& b, const std::vector<Tasks>& list) {
  b.carr(list.size());
  for (const auto& t : list) {
    b.cstr(t.sub).carr(t.partitions.size());
    for (int p : t.partitions) b.i32(p);
    b.tags0();
  }
}

std::vector<uint8_t> hb_response(int corr, const std::string& member, int epoch, int interval_ms,
                                 const std::vector<Tasks>& active, const std::vector<Tasks>& standby, int status = -1,
                                 bool unchanged = false) {
  Bytes b;
  b.i32(corr).tags0();
  b.i32(0).i16(0).cnull().cstr(member).i32(epoch).i32(interval_ms)  // Throttle, Error, Message, MemberId, Epoch, Interval
      .i32(30000).i64(10000);                                       // TaskOffsetIntervalMs, AcceptableRecoveryLag
  if (status < 0) b.carr(0);
  else b.carr(1).i8(status).cstr("detail").tags0();
  if (unchanged) {
    b.cnull().cnull().cnull();  // null task lists: the assignment did not change
  } else {
    task_list(b, active);
    task_list(b, standby);
    task_list(b, {});
  }
  b.i8(0).i32(0).cnull().tags0();  // TopologyDescriptionRequired, EndpointInformationEpoch, PartitionsByUserEndpoint
  return b.message();
}

class Feeder {
 public:
  Feeder() : ps_(kwire::ProgramSet::release()), decoder_(ps_), model_(ps_) { conn_.id = 1; }
  void request(uint64_t packet, double t, const std::vector<uint8_t>& bytes) {
    frame_.clear();
    decoder_.decode_request(bytes, frame_);
    ASSERT_TRUE(frame_.ok()) << frame_.errors[0].reason;
    model_.on_frame(ctx(packet, t), frame_);
  }
  void response(uint64_t packet, double t, const std::vector<uint8_t>& bytes) {
    frame_.clear();
    decoder_.decode_response(bytes, 88, 1, frame_);
    ASSERT_TRUE(frame_.ok()) << frame_.errors[0].reason;
    model_.on_frame(ctx(packet, t), frame_);
  }
  const kwire::streams::Summary& finish() { return model_.finish(); }

 private:
  kwire::FrameContext ctx(uint64_t packet, double t) {
    kwire::FrameContext c;
    c.number = packet;
    c.packet.number = packet;
    c.packet.ts_sec = 1000 + static_cast<int64_t>(t);
    c.packet.ts_usec = static_cast<int32_t>((t - static_cast<int64_t>(t)) * 1e6 + 0.5);
    c.conn = &conn_;
    return c;
  }
  const kwire::ProgramSet& ps_;
  kwire::FrameDecoder decoder_;
  kwire::streams::StreamsModel model_;
  kwire::Frame frame_;
  kwire::TcpConnection conn_;
};

// Member a joins and gets 0_0 and 0_1; b joins and is handed 0_1 while a
// still holds it (a coordinator bug this must show); a's next heartbeat comes
// 4.9 s after its previous one although the coordinator asked for one every
// second; b leaves.
TEST(StreamsModel, HandBuiltGroup) {
  Feeder f;
  f.request(1, 0.0, hb_request(1, "a", 0));
  f.response(2, 0.1, hb_response(1, "a", 1, 1000, {{"0", {0, 1}}}, {}, 5));
  f.request(3, 0.5, hb_request(2, "b", 0));
  f.response(4, 0.6, hb_response(2, "b", 2, 1000, {{"0", {1}}}, {{"0", {0}}}));
  f.request(5, 5.0, hb_request(3, "a", 1));
  f.response(6, 5.1, hb_response(3, "a", 2, 1000, {{"0", {0}}}, {}));
  f.request(7, 5.5, hb_request(4, "b", -1));
  f.response(8, 5.6, hb_response(4, "b", -1, 1000, {}, {}));
  const auto& s = f.finish();
  ASSERT_EQ(s.groups.size(), 1u);
  const auto& g = s.groups.at("g");
  ASSERT_EQ(g.member_order, (std::vector<std::string>{"a", "b"}));
  const auto& a = g.members.at("a");
  const auto& b = g.members.at("b");
  EXPECT_EQ(a.client_id, "app-a");
  EXPECT_EQ(b.process_id, "process-b");
  ASSERT_EQ(a.epochs.size(), 2u);
  EXPECT_EQ(a.epochs[0].epoch, 1);
  EXPECT_EQ(a.epochs[0].at.frame, 2u);
  EXPECT_EQ(a.epochs[1].epoch, 2);
  EXPECT_EQ(a.epochs[1].at.frame, 6u);
  ASSERT_EQ(b.epochs.size(), 2u);
  EXPECT_EQ(b.epochs[1].epoch, -1);
  EXPECT_TRUE(b.left);
  // Status ASSIGNMENT_DELAYED (5) on a's first answer, gone on its next.
  ASSERT_EQ(a.statuses.size(), 2u);
  EXPECT_EQ(a.statuses[0].statuses.count(5), 1u);
  EXPECT_TRUE(a.statuses[1].statuses.empty());

  ASSERT_EQ(g.rebalances.size(), 2u);
  EXPECT_EQ(g.rebalances[0].to, 1);
  EXPECT_EQ(g.rebalances[1].from, 1);
  EXPECT_EQ(g.rebalances[1].to, 2);
  ASSERT_EQ(g.rebalances[1].causes.size(), 1u);
  EXPECT_NE(g.rebalances[1].causes[0].find("member b joined (frame 3)"), std::string::npos);

  // 0_1 went from a to b; 0_0 was first a's active, then b's standby.
  bool moved = false;
  for (const auto& m : g.moves)
    if (m.task == "0_1" && m.kind == kwire::streams::TaskKind::Active && m.from == "a" && m.to == "b" && m.at.frame == 4) moved = true;
  EXPECT_TRUE(moved);

  std::map<std::string, int> kinds;
  for (const auto& an : g.anomalies) ++kinds[an.kind];
  EXPECT_EQ(kinds["double-active"], 1);
  EXPECT_EQ(kinds["late-heartbeat"], 1);
  for (const auto& an : g.anomalies) {
    if (an.kind == "double-active") { EXPECT_EQ(an.at.frame, 4u); EXPECT_NE(an.detail.find("0_1"), std::string::npos); }
    if (an.kind == "late-heartbeat") { EXPECT_EQ(an.member, "a"); EXPECT_EQ(an.at.frame, 5u); }
  }
}

// Heartbeats on time and a task handed over only after it was revoked: no anomaly.
TEST(StreamsModel, CleanHandoverHasNoAnomaly) {
  Feeder f;
  f.request(1, 0.0, hb_request(1, "a", 0));
  f.response(2, 0.1, hb_response(1, "a", 1, 1000, {{"0", {0, 1}}}, {}));
  f.request(3, 1.0, hb_request(2, "b", 0));
  f.response(4, 1.1, hb_response(2, "b", 2, 1000, {}, {}));
  f.request(5, 1.1, hb_request(3, "a", 1));
  f.response(6, 1.2, hb_response(3, "a", 2, 1000, {{"0", {0}}}, {}));  // revoke 0_1
  f.request(7, 2.0, hb_request(4, "b", 2));
  f.response(8, 2.1, hb_response(4, "b", 2, 1000, {{"0", {1}}}, {}));  // then hand it to b
  f.request(9, 2.1, hb_request(5, "a", 2));
  f.response(10, 2.2, hb_response(5, "a", 2, 1000, {}, {}, -1, true));  // null lists: unchanged
  const auto& g = f.finish().groups.at("g");
  EXPECT_TRUE(g.anomalies.empty()) << g.anomalies[0].kind << ": " << g.anomalies[0].detail;
  EXPECT_EQ(g.members.at("a").current.tasks[0], (std::set<std::string>{"0_0"}));
}

// Without a description on the wire the graph is the heartbeat's topology:
// one node per sub-topology, an edge where one writes the repartition topic
// another reads.
TEST(StreamsModel, HeartbeatTopologyGraph) {
  kwire::streams::Group g;
  g.id = "g";
  g.topology.present = true;
  kwire::streams::Subtopology one, two;
  one.id = "1";
  one.source_topics = {"clicks"};
  one.repartition_sink_topics = {"g-by-title-repartition"};
  two.id = "2";
  two.repartition_source_topics = {"g-by-title-repartition"};
  two.changelog_topics = {"g-counts-changelog"};
  g.topology.subtopologies = {one, two};
  const std::string dot = kwire::streams::topology_dot(g);
  EXPECT_NE(dot.find("\"subtopology-1\" -> \"subtopology-2\" [label=\"g-by-title-repartition\"]"), std::string::npos) << dot;
  size_t edges = 0;
  for (size_t at = 0; (at = dot.find(" -> ", at)) != std::string::npos; ++at) ++edges;
  EXPECT_EQ(edges, 1u);
  EXPECT_NE(dot.find("changelog: [g-counts-changelog]"), std::string::npos);
  const std::string text = kwire::streams::describe_text(g.topology);
  EXPECT_NE(text.find("   Sub-topology: 2\n"), std::string::npos);
}

// ---------------------------------------------------------------------------
// The committed captures: `kwire streams -T json` against `kwire decode -T json`.

std::string capture(const std::string& name) { return std::string(KWIRE_SOURCE_DIR) + "/captures/" + name; }

std::vector<json> decoded(const std::string& name, const std::string& apis) {
  static std::map<std::string, std::vector<json>> cache;
  const std::string key = name + "|" + apis;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto r = kwire::test::kwire_cmd("decode -r " + capture(name) + " -T json --api " + apis);
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<json> out;
  for (const auto& line : kwire::test::lines(r.out))
    if (!line.empty()) out.push_back(json::parse(line));
  return cache.emplace(key, std::move(out)).first->second;
}

// The name is a string_view: a std::string temporary made from a literal
// argument makes GCC 14's -Wdangling-reference take the result, a reference
// into the cache, for a reference into that temporary.
const json& report(std::string_view name) {
  static std::map<std::string, json, std::less<>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto r = kwire::test::kwire_cmd("streams -r " + capture(std::string(name)) + " -T json");
  EXPECT_EQ(r.status, 0) << r.err;
  return cache.emplace(std::string(name), json::parse(r.out)).first->second;
}

const json* request_of(const std::vector<json>& msgs, const json& response) {
  for (const auto& m : msgs)
    if (m["direction"] == "request" && m["src"] == response["dst"] && m["dst"] == response["src"] &&
        m["correlationId"] == response["correlationId"] && m["apiKey"] == response["apiKey"])
      return &m;
  return nullptr;
}

const json& group_of(const json& rep, const std::string& gid) {
  for (const auto& g : rep["groups"])
    if (g["groupId"] == gid) return g;
  static const json none;
  ADD_FAILURE() << "no group " << gid;
  return none;
}

const json& member_of(const json& group, const std::string& mid) {
  for (const auto& m : group["members"])
    if (m["memberId"] == mid) return m;
  static const json none;
  ADD_FAILURE() << "no member " << mid;
  return none;
}

// Every member's epoch history is the sequence of epochs its successful
// heartbeat responses carried (each change once, at its response's frame).
TEST(StreamsCaptures, EpochHistoriesMatchDecode) {
  for (const std::string name : {"demo.pcapng", "stateful.pcapng", "admin.pcapng", "plugin-failures.pcapng",
                                 "old-client.pcapng", "topology-upgrade.pcapng"}) {
    SCOPED_TRACE(name);
    const auto msgs = decoded(name, "StreamsGroupHeartbeat");
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<uint64_t, int>>> expected;
    for (const auto& m : msgs) {
      if (m["direction"] != "response" || m["body"]["errorCode"] != 0) continue;
      const json* q = request_of(msgs, m);
      ASSERT_NE(q, nullptr);
      auto& seq = expected[{q->at("body")["groupId"].get<std::string>(), q->at("body")["memberId"].get<std::string>()}];
      const int epoch = m["body"]["memberEpoch"];
      if (seq.empty() || seq.back().second != epoch) seq.push_back({m["frame"].get<uint64_t>(), epoch});
    }
    ASSERT_FALSE(expected.empty());
    size_t members = 0;
    for (const auto& g : report(name)["groups"]) members += g["members"].size();
    std::set<std::pair<std::string, std::string>> heartbeating;
    for (const auto& m : msgs)
      if (m["direction"] == "request") heartbeating.insert({m["body"]["groupId"].get<std::string>(), m["body"]["memberId"].get<std::string>()});
    EXPECT_EQ(members, heartbeating.size());
    for (const auto& [key, seq] : expected) {
      const json& m = member_of(group_of(report(name), key.first), key.second);
      std::vector<std::pair<uint64_t, int>> got;
      for (const auto& e : m["epochs"]) got.push_back({e["frame"].get<uint64_t>(), e["epoch"].get<int>()});
      EXPECT_EQ(got, seq) << key.second;
    }
  }
}

// cluster.pcapng, three brokers: the group's heartbeats were answered by its
// coordinator, node 1 at 127.0.0.11:60287, as Kafka's Admin reported it
// (captures/MANIFEST.md); the span runs from the first to the last answered
// heartbeat response, and the text report names it.
TEST(StreamsCaptures, CoordinatorOfTheClusterCapturesGroup) {
  const json& g = group_of(report("cluster.pcapng"), "stateful-app");
  ASSERT_EQ(g["coordinators"].size(), 1u) << g["coordinators"].dump();
  const json& c = g["coordinators"][0];
  EXPECT_EQ(c["broker"], "127.0.0.11:60287");
  EXPECT_EQ(c["nodeId"], 1);
  const auto msgs = decoded("cluster.pcapng", "StreamsGroupHeartbeat");
  std::vector<uint64_t> answered;
  for (const auto& m : msgs) {
    if (m["direction"] != "response" || m["src"] != "127.0.0.11:60287") continue;
    const int err = m["body"]["errorCode"];
    if (err != 15 && err != 16) answered.push_back(m["frame"]);
  }
  ASSERT_FALSE(answered.empty());
  EXPECT_EQ(c["heartbeatsAnswered"].get<size_t>(), answered.size());
  EXPECT_EQ(c["first"]["frame"], answered.front());
  EXPECT_EQ(c["last"]["frame"], answered.back());
  auto text = kwire::test::kwire_cmd("streams -r " + capture("cluster.pcapng"));
  EXPECT_NE(text.out.find("\n  coordinator node 1 127.0.0.11:60287 ("), std::string::npos) << text.out;
}

// stateful: instance a alone gets all four tasks; b joins (a rebalance caused
// by b's join), takes 1_1 and 2_1 from a, standby 2_0 for b and 2_1 for a; b
// leaves (the next rebalance names it) and a takes 1_1 and 2_1 back. No
// warm-up tasks (Kafka 4.4.0 assigns none), no task active on two members.
TEST(StreamsCaptures, StatefulScenario) {
  const json& g = group_of(report("stateful.pcapng"), "stateful-app");
  std::string a, b;
  for (const auto& m : decoded("stateful.pcapng", "StreamsGroupHeartbeat")) {
    if (m["direction"] != "request") continue;
    const std::string client = m["header"]["clientId"];
    if (client.rfind("stateful-app-a", 0) == 0) a = m["body"]["memberId"];
    if (client.rfind("stateful-app-b", 0) == 0) b = m["body"]["memberId"];
  }
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  ASSERT_EQ(g["members"].size(), 2u);
  EXPECT_NE(member_of(g, a)["processId"], member_of(g, b)["processId"]);
  EXPECT_TRUE(member_of(g, b)["left"].is_object());

  int joined = -1, left = -1;
  for (const auto& r : g["rebalances"])
    for (const auto& c : r["causes"]) {
      const std::string cause = c;
      if (cause.rfind("member " + b + " joined", 0) == 0) joined = r["to"];
      if (cause.rfind("member " + b + " left", 0) == 0) left = r["to"];
    }
  EXPECT_EQ(joined, 4);  // group epoch 3 -> 4 (MANIFEST)
  EXPECT_EQ(left, 5);

  std::set<std::string> moves;
  for (const auto& mv : g["taskMoves"])
    moves.insert(mv["task"].get<std::string>() + " " + mv["kind"].get<std::string>() + " " +
                 (mv["from"].is_null() ? std::string("-") : (mv["from"] == a ? "a" : "b")) + ">" + (mv["to"] == a ? "a" : "b"));
  for (const char* expect : {"1_1 active a>b", "2_1 active a>b", "1_1 active b>a", "2_1 active b>a", "2_0 standby ->b",
                             "2_1 standby ->a", "1_0 active ->a", "2_0 active ->a"})
    EXPECT_TRUE(moves.count(expect)) << expect;
  for (const auto& m : g["members"])
    for (const auto& as : m["assignments"]) EXPECT_TRUE(as["warmup"].empty());
  for (const auto& an : g["anomalies"]) EXPECT_NE(an["kind"], "double-active") << an["detail"];
}

// topology-upgrade: the members the coordinator answered with STALE_TOPOLOGY
// (status code 0 in the decoded responses) carry that status from that
// frame; the hand-built member took the group to topology epoch 1; the two
// deletes succeeded and restarted the group's epochs.
TEST(StreamsCaptures, TopologyUpgradeScenario) {
  const auto msgs = decoded("topology-upgrade.pcapng", "StreamsGroupHeartbeat");
  std::map<std::string, uint64_t> stale;  // member -> first frame
  for (const auto& m : msgs) {
    if (m["direction"] != "response" || !m["body"]["status"].is_array()) continue;
    for (const auto& st : m["body"]["status"])
      if (st["statusCode"] == 0 && !stale.count(m["body"]["memberId"])) stale[m["body"]["memberId"]] = m["frame"];
  }
  ASSERT_FALSE(stale.empty());
  const json& g = group_of(report("topology-upgrade.pcapng"), "orders-upgrade");
  for (const auto& [mid, frame] : stale) {
    uint64_t first = 0;
    for (const auto& st : member_of(g, mid)["statuses"])
      for (const auto& s : st["statuses"])
        if (s["name"] == "STALE_TOPOLOGY" && !first) first = st["frame"];
    EXPECT_EQ(first, frame) << mid;
  }
  EXPECT_EQ(g["topologyEpoch"], 1);
  ASSERT_EQ(g["deletes"].size(), 2u);
  int restarts = 0;
  for (const auto& r : g["rebalances"]) {
    EXPECT_NE(r["causes"].size(), 0u) << r.dump();
    for (const auto& c : r["causes"])
      if (c.get<std::string>().rfind("group deleted", 0) == 0) { ++restarts; EXPECT_EQ(r["to"], 1); }
  }
  EXPECT_EQ(restarts, 2);
  for (const auto& an : g["anomalies"]) EXPECT_NE(an["kind"], "stuck-epoch") << an["detail"];
}

// plugin-failures: each failed StreamsGroupTopologyDescriptionUpdate in the
// decoded responses is a failed push of its group and an anomaly; the
// permanent group never stores a description, the transient one does later.
TEST(StreamsCaptures, PluginFailuresScenario) {
  const auto msgs = decoded("plugin-failures.pcapng", "StreamsGroupTopologyDescriptionUpdate");
  std::map<std::string, std::vector<uint64_t>> failed;  // group -> response frames
  for (const auto& m : msgs) {
    if (m["direction"] != "response" || m["body"]["errorCode"] == 0) continue;
    const json* q = request_of(msgs, m);
    ASSERT_NE(q, nullptr);
    failed[q->at("body")["groupId"]].push_back(m["frame"]);
  }
  ASSERT_EQ(failed.size(), 2u);
  const json& rep = report("plugin-failures.pcapng");
  for (const auto& [gid, frames] : failed) {
    const json& g = group_of(rep, gid);
    std::vector<uint64_t> pushes, anomalies;
    for (const auto& p : g["pushes"])
      if (p["error"] != "NONE") pushes.push_back(p["response"]["frame"]);
    for (const auto& an : g["anomalies"])
      if (an["kind"] == "push-failed") {
        anomalies.push_back(an["frame"]);
        const std::string d = an["detail"];
        if (gid == "orders-app-permanent") {
          EXPECT_NE(d.find("no later push was stored"), std::string::npos) << d;
        }
        if (gid == "orders-app-transient") {
          EXPECT_NE(d.find("a later push was stored"), std::string::npos) << d;
        }
      }
    EXPECT_EQ(pushes, frames) << gid;
    EXPECT_EQ(anomalies, frames) << gid;
  }
}

// The appendix topology (demo.pcapng) as DOT: exactly its three nodes and two
// edges, the names and successors of the pushed description in the decode.
TEST(StreamsCaptures, DemoTopologyDot) {
  std::set<std::string> names, edges;
  for (const auto& m : decoded("demo.pcapng", "StreamsGroupTopologyDescriptionUpdate")) {
    if (m["direction"] != "request") continue;
    for (const auto& s : m["body"]["topologyDescription"]["subtopologies"])
      for (const auto& n : s["nodes"]) {
        names.insert(n["name"]);
        for (const auto& succ : n["successors"]) edges.insert(n["name"].get<std::string>() + "->" + succ.get<std::string>());
      }
  }
  ASSERT_EQ(names.size(), 3u);
  ASSERT_EQ(edges.size(), 2u);
  const std::string dot = ::testing::TempDir() + "kwire-streams-demo.dot";
  auto r = kwire::test::kwire_cmd("streams -r " + capture("demo.pcapng") + " --dot " + dot);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(dot);
  std::set<std::string> got_nodes, got_edges;
  const std::regex node_re(R"re(^\s*"([^"]+)" \[label=)re"), edge_re(R"re(^\s*"([^"]+)" -> "([^"]+)")re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, edge_re)) got_edges.insert(m[1].str() + "->" + m[2].str());
    else if (std::regex_search(line, m, node_re)) got_nodes.insert(m[1]);
  }
  EXPECT_EQ(got_nodes, names);
  EXPECT_EQ(got_edges, edges);
}

// -Y: the model sees only the selected messages. One member's exchanges
// (request.body.memberId keeps each response with its request) give that
// member alone, with the epoch history the whole capture gives it.
TEST(StreamsCli, DisplayFilterSelectsOneMember) {
  auto all = kwire::test::kwire_cmd("streams -r " + capture("stateful.pcapng") + " -T json");
  ASSERT_EQ(all.status, 0) << all.err;
  const json whole = json::parse(all.out);
  const auto& members = whole["groups"][0]["members"];
  ASSERT_EQ(members.size(), 2u);
  auto history = [](const json& m) {
    std::vector<std::pair<int, uint64_t>> h;
    for (const auto& e : m["epochs"]) h.emplace_back(e["epoch"].get<int>(), e["frame"].get<uint64_t>());
    return h;
  };
  for (const auto& m : members) {
    const std::string id = m["memberId"];
    auto one = kwire::test::kwire_cmd("streams -r " + capture("stateful.pcapng") + " -T json -Y 'request.body.memberId == \"" +
                                      id + "\"'");
    ASSERT_EQ(one.status, 0) << one.err;
    const json j = json::parse(one.out);
    ASSERT_EQ(j["groups"].size(), 1u);
    ASSERT_EQ(j["groups"][0]["members"].size(), 1u) << id;
    const json& got = j["groups"][0]["members"][0];
    EXPECT_EQ(got["memberId"], id);
    EXPECT_EQ(got["heartbeats"], m["heartbeats"]) << id;
    EXPECT_EQ(history(got), history(m)) << id;
  }
  auto none = kwire::test::kwire_cmd("streams -r " + capture("stateful.pcapng") + " -T json -Y 'request.body.groupId == \"nobody\"'");
  ASSERT_EQ(none.status, 0);
  EXPECT_TRUE(json::parse(none.out)["groups"].empty());
  auto bad = kwire::test::kwire_cmd("streams -r " + capture("stateful.pcapng") + " -Y 'body.memberEpoch =='");
  EXPECT_EQ(WEXITSTATUS(bad.status), 2);
  EXPECT_NE(bad.err.find("column"), std::string::npos) << bad.err;
}

TEST(StreamsCli, HelpListsEveryOption) {
  auto r = kwire::test::kwire_cmd("streams --help");
  ASSERT_EQ(r.status, 0);
  for (const char* opt : {"-r FILE", "-p PORTS", "-f FILTER", "-T text|json", "-Y FILTER", "--html FILE", "--dot FILE",
                          "--overlay NAME", "--spec-dir DIR"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  auto top = kwire::test::kwire_cmd("--help");
  EXPECT_NE(top.out.find("streams -r FILE"), std::string::npos);
  EXPECT_NE(kwire::test::kwire_cmd("streams -T xml -r x").status, 0);
}

}  // namespace
