// The committed real captures (captures/*.pcapng, see captures/MANIFEST.md), decoded
// by the real binary: each one completely, together every streams-group RPC, and
// field values in a few frames of each scenario. The checks are about what the
// scenarios do, not about frame numbers, so a regenerated capture passes too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_support.hpp"

namespace {

using nlohmann::json;

using kwire::test::lines;

kwire::test::CommandResult run_kwire(const std::string& args) { return kwire::test::kwire_cmd(args); }

std::string capture(const std::string& name) { return std::string(KWIRE_SOURCE_DIR) + "/captures/" + name; }

// Every capture the scenarios write (appendix -> demo.pcapng).
const std::vector<std::string> kCaptures = {"demo.pcapng",         "stateful.pcapng",   "admin.pcapng",
                                            "plugin-failures.pcapng", "old-client.pcapng", "topology-upgrade.pcapng"};

// All messages of a capture as JSON lines, in capture order; decoded once per file.
const std::vector<json>& messages(const std::string& name) {
  static std::map<std::string, std::vector<json>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto r = run_kwire("decode -r " + capture(name) + " -T json");
  EXPECT_EQ(r.status, 0) << name << ": " << r.err;
  std::vector<json> out;
  size_t start = 0;
  for (size_t i; (i = r.out.find('\n', start)) != std::string::npos; start = i + 1) {
    if (i > start) out.push_back(json::parse(r.out.substr(start, i - start)));
  }
  return cache.emplace(name, std::move(out)).first->second;
}

std::vector<json> of(const std::string& name, int api_key, const std::string& direction) {
  std::vector<json> out;
  for (const auto& m : messages(name))
    if (m["apiKey"] == api_key && m["direction"] == direction) out.push_back(m);
  return out;
}

// The request a response answers: same connection (endpoints swapped), same correlation id.
const json* request_of(const std::string& name, const json& response) {
  for (const auto& m : messages(name)) {
    if (m["direction"] == "request" && m["src"] == response["dst"] && m["dst"] == response["src"] &&
        m["correlationId"] == response["correlationId"] && m["apiKey"] == response["apiKey"])
      return &m;
  }
  return nullptr;
}

// "1_0" style names of a heartbeat / describe task list.
std::set<std::string> task_names(const json& list) {
  std::set<std::string> out;
  if (!list.is_array()) return out;
  for (const auto& t : list)
    for (const auto& p : t["partitions"]) out.insert(t["subtopologyId"].get<std::string>() + "_" + std::to_string(p.get<int>()));
  return out;
}

std::map<std::string, json> nodes_by_name(const json& subtopology) {
  std::map<std::string, json> out;
  for (const auto& n : subtopology["nodes"]) out[n["name"]] = n;
  return out;
}

// Positive epochs the broker granted a member, in capture order.
std::vector<int> granted_epochs(const std::string& name, const std::string& member_id) {
  std::vector<int> out;
  for (const auto& r : of(name, 88, "response"))
    if (r["body"]["errorCode"] == 0 && r["body"]["memberId"] == member_id && r["body"]["memberEpoch"] > 0)
      out.push_back(r["body"]["memberEpoch"]);
  return out;
}

void expect_rising(const std::vector<int>& epochs, const std::string& what) {
  ASSERT_FALSE(epochs.empty()) << what;
  EXPECT_TRUE(std::is_sorted(epochs.begin(), epochs.end())) << what;
  EXPECT_LT(epochs.front(), epochs.back()) << what << ": the epoch never moved";
}

// Member ids of the heartbeats of a group, in order of first appearance.
std::vector<std::string> members_of(const std::string& name, const std::string& group) {
  std::vector<std::string> out;
  for (const auto& r : of(name, 88, "request")) {
    if (r["body"]["groupId"] != group) continue;
    std::string id = r["body"]["memberId"];
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  }
  return out;
}

}  // namespace

TEST(Captures, EveryCommittedCaptureDecodesCompletely) {
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(std::string(KWIRE_SOURCE_DIR) + "/captures"))
    if (e.path().extension() == ".pcapng" || e.path().extension() == ".pcap") on_disk.insert(e.path().filename());
  for (const auto& name : kCaptures) EXPECT_TRUE(on_disk.count(name)) << name << " is missing";

  const std::regex stats(R"(stats: frames=(\d+) requests=(\d+) responses=(\d+) unmatched=(\d+) malformed=(\d+))");
  for (const auto& name : on_disk) {
    auto r = run_kwire("decode -r " + capture(name) + " --stats -c 0");
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, stats)) << name << ": no stats line in\n" << r.out;
    EXPECT_GT(std::stoi(m[2]), 0) << name;
    EXPECT_EQ(m[2], m[3]) << name << ": every request has its response";
    EXPECT_EQ(m[4], "0") << name << ": unmatched";
    EXPECT_EQ(m[5], "0") << name << ": malformed";
  }
}

TEST(Captures, TogetherTheyHoldEveryStreamsGroupRpc) {
  std::set<std::tuple<int, int, std::string>> seen;
  bool update_ok = false, update_failed = false, delete_ok = false, delete_failed = false;
  for (const auto& name : kCaptures) {
    for (const auto& m : messages(name)) {
      seen.emplace(m["apiKey"].get<int>(), m["apiVersion"].get<int>(), m["direction"].get<std::string>());
      if (m["direction"] != "response") continue;
      if (m["apiKey"] == 93) (m["body"]["errorCode"] == 0 ? update_ok : update_failed) = true;
      if (m["apiKey"] == 42 && m["apiVersion"] == 3)
        for (const auto& res : m["body"]["results"]) (res["errorCode"] == 0 ? delete_ok : delete_failed) = true;
    }
  }
  struct Want {
    int key, version;
    const char* api;
  };
  for (Want w : {Want{88, 0, "StreamsGroupHeartbeat"}, Want{88, 1, "StreamsGroupHeartbeat"},
                 Want{89, 1, "StreamsGroupDescribe"}, Want{93, 0, "StreamsGroupTopologyDescriptionUpdate"},
                 Want{42, 3, "DeleteGroups (newest)"}, Want{75, 0, "DescribeTopicPartitions"}}) {
    for (const char* dir : {"request", "response"})
      EXPECT_TRUE(seen.count({w.key, w.version, dir})) << w.api << " v" << w.version << " " << dir;
  }
  EXPECT_TRUE(update_ok) << "a successful StreamsGroupTopologyDescriptionUpdate";
  EXPECT_TRUE(update_failed) << "a failing StreamsGroupTopologyDescriptionUpdate";
  EXPECT_TRUE(delete_ok) << "a DeleteGroups v3 result without error";
  EXPECT_TRUE(delete_failed) << "a DeleteGroups v3 result with an error";
}

TEST(AppendixCapture, EpochsRiseAndThePushCarriesTheAppendixTopology) {
  const std::string cap = "demo.pcapng";
  auto members = members_of(cap, "orders-app");
  ASSERT_EQ(members.size(), 1u);
  expect_rising(granted_epochs(cap, members[0]), "orders-app member");

  auto push = of(cap, 93, "request");
  ASSERT_EQ(push.size(), 1u);
  EXPECT_EQ(push[0]["body"]["groupId"], "orders-app");
  EXPECT_EQ(push[0]["body"]["topologyEpoch"], 0);
  auto nodes = nodes_by_name(push[0]["body"]["topologyDescription"]["subtopologies"][0]);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes["KSTREAM-SOURCE-0000000000"]["nodeType"], 1);
  EXPECT_EQ(nodes["KSTREAM-SOURCE-0000000000"]["sourceTopics"], json({"orders"}));
  EXPECT_EQ(nodes["KSTREAM-SOURCE-0000000000"]["successors"], json({"KSTREAM-FILTER-0000000001"}));
  EXPECT_EQ(nodes["KSTREAM-FILTER-0000000001"]["nodeType"], 2);
  EXPECT_EQ(nodes["KSTREAM-FILTER-0000000001"]["successors"], json({"KSTREAM-SINK-0000000002"}));
  EXPECT_EQ(nodes["KSTREAM-SINK-0000000002"]["nodeType"], 3);
  EXPECT_EQ(nodes["KSTREAM-SINK-0000000002"]["sinkTopic"], "valid-orders");
  EXPECT_EQ(nodes["KSTREAM-SINK-0000000002"]["successors"], json::array());
  auto accepted = of(cap, 93, "response");
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0]["body"]["errorCode"], 0);
}

TEST(StatefulCapture, TwoInstancesShareActiveAndStandbyTasksThenOneLeaves) {
  const std::string cap = "stateful.pcapng";
  auto members = members_of(cap, "stateful-app");
  ASSERT_EQ(members.size(), 2u) << "instances a and b";
  const std::string& a = members[0];
  const std::string& b = members[1];
  // a's epoch moves when b joins and again when b leaves; b joins at a later group epoch.
  auto epochs_a = granted_epochs(cap, a);
  auto epochs_b = granted_epochs(cap, b);
  expect_rising(epochs_a, "member a");
  ASSERT_FALSE(epochs_b.empty());
  EXPECT_TRUE(std::is_sorted(epochs_b.begin(), epochs_b.end()));
  EXPECT_GT(epochs_b.front(), epochs_a.front());
  EXPECT_GT(epochs_a.back(), epochs_b.back()) << "a's epoch moves again after b left";

  // The group settings reach the members: a 1 s task offset interval, recovery lag 10.
  bool standby_a = false, standby_b = false, offsets_reported = false, b_left = false;
  for (const auto& r : of(cap, 88, "response")) {
    const auto& body = r["body"];
    if (body["errorCode"] != 0 || body["memberEpoch"].get<int>() < 0) continue;
    EXPECT_EQ(body["acceptableRecoveryLag"], 10);
    EXPECT_EQ(body["taskOffsetIntervalMs"], 1000);
    // Kafka 4.4.0 never assigns warm-up tasks (see StatefulScenario.java).
    if (body["warmupTasks"].is_array()) {
      EXPECT_TRUE(body["warmupTasks"].empty());
    }
    if (!task_names(body["standbyTasks"]).empty()) (body["memberId"] == a ? standby_a : standby_b) = true;
  }
  for (const auto& q : of(cap, 88, "request")) {
    if (q["body"]["taskOffsets"].is_array() && !q["body"]["taskOffsets"].empty()) offsets_reported = true;
    if (q["body"]["memberId"] == b && q["body"]["memberEpoch"] == -1) b_left = true;
  }
  EXPECT_TRUE(standby_a && standby_b) << "each instance gets a standby task while both run";
  EXPECT_TRUE(offsets_reported) << "members report task offsets";
  EXPECT_TRUE(b_left) << "b leaves with epoch -1";

  // a's active tasks (as assigned, empty lists left out): all four alone, two while b
  // runs, all four again after b left.
  std::vector<std::set<std::string>> a_actives;
  for (const auto& r : of(cap, 88, "response")) {
    if (r["body"]["memberId"] != a || !r["body"]["activeTasks"].is_array()) continue;
    auto t = task_names(r["body"]["activeTasks"]);
    if (!t.empty() && (a_actives.empty() || a_actives.back() != t)) a_actives.push_back(t);
  }
  const std::set<std::string> all = {"1_0", "1_1", "2_0", "2_1"};
  ASSERT_GE(a_actives.size(), 3u);
  EXPECT_EQ(a_actives.front(), all);
  EXPECT_EQ(a_actives.back(), all);
  EXPECT_TRUE(std::any_of(a_actives.begin(), a_actives.end(), [](const auto& s) { return s.size() == 2; }))
      << "a hands two active tasks to b";

  // The pushed description has the repartition step, the count store and the global store.
  auto push = of(cap, 93, "request");
  ASSERT_FALSE(push.empty());
  const auto& td = push[0]["body"]["topologyDescription"];
  ASSERT_EQ(td["globalStores"].size(), 1u);
  EXPECT_EQ(td["globalStores"][0]["source"]["sourceTopics"], json({"pages"}));
  std::set<std::string> stores;
  for (const auto& st : td["subtopologies"])
    for (const auto& n : st["nodes"])
      for (const auto& s : n["stores"]) stores.insert(s);
  EXPECT_TRUE(stores.count("clicks-per-page"));
  EXPECT_EQ(td["subtopologies"].size(), 2u);
}

TEST(AdminCapture, DescribeWithAndWithoutTopologyThenDeleteFailingAndSucceeding) {
  const std::string cap = "admin.pcapng";
  bool with = false, without = false, assignor = false;
  for (const auto& r : of(cap, 89, "response")) {
    const json* q = request_of(cap, r);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(r["apiVersion"], 1);
    const auto& g = r["body"]["groups"][0];
    if (g["errorCode"] != 0) continue;
    if (g["assignorName"] == "sticky") assignor = true;
    if (q->at("body")["includeTopologyDescription"] == true) {
      with = true;
      EXPECT_EQ(g["topologyDescriptionStatus"], 3) << "AVAILABLE";
      EXPECT_FALSE(g["topologyDescription"].is_null());
    } else {
      without = true;
      EXPECT_EQ(g["topologyDescriptionStatus"], 0) << "NOT_REQUESTED";
      EXPECT_TRUE(g["topologyDescription"].is_null());
    }
  }
  EXPECT_TRUE(with && without);
  EXPECT_TRUE(assignor) << "AssignorName sticky in a v1 describe response";

  auto topics = of(cap, 75, "response");
  ASSERT_FALSE(topics.empty());
  std::set<std::string> names;
  for (const auto& t : topics[0]["body"]["topics"]) names.insert(t["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"orders", "valid-orders"}));

  auto deletes = of(cap, 42, "response");
  ASSERT_EQ(deletes.size(), 2u);
  for (const auto& d : deletes) EXPECT_EQ(d["apiVersion"], 3);
  const auto& failed = deletes[0]["body"]["results"][0];
  EXPECT_EQ(failed["groupId"], "orders-app");
  EXPECT_EQ(failed["errorCode"], 134) << "GROUP_DELETION_FAILED";
  EXPECT_EQ(failed["errorMessage"], "Topology description plugin failed to delete the topology.");
  const auto& ok = deletes[1]["body"]["results"][0];
  EXPECT_EQ(ok["errorCode"], 0);
  EXPECT_TRUE(ok["errorMessage"].is_null());

  auto last = of(cap, 89, "response").back();
  EXPECT_EQ(last["body"]["groups"][0]["errorCode"], 69) << "GROUP_ID_NOT_FOUND after the delete";
}

TEST(PluginFailuresCapture, PermanentAndTransientSetTopologyFailures) {
  const std::string cap = "plugin-failures.pcapng";
  std::map<std::string, std::vector<std::pair<int, json>>> by_group;  // group -> (error, message)
  for (const auto& r : of(cap, 93, "response")) {
    const json* q = request_of(cap, r);
    ASSERT_NE(q, nullptr);
    by_group[q->at("body")["groupId"]].emplace_back(r["body"]["errorCode"].get<int>(), r["body"]["errorMessage"]);
  }
  const auto& perm = by_group["orders-app-permanent"];
  ASSERT_EQ(perm.size(), 1u) << "a permanent failure is not retried";
  EXPECT_EQ(perm[0].first, 135) << "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED";
  EXPECT_EQ(perm[0].second, "kwire testbed plugin rejects topology epoch 0 of group orders-app-permanent permanently");

  const auto& trans = by_group["orders-app-transient"];
  ASSERT_EQ(trans.size(), 2u) << "failed once, pushed again when the broker asked";
  EXPECT_EQ(trans[0].first, 135);
  EXPECT_EQ(trans[0].second, "kwire testbed plugin store unavailable for group orders-app-transient (transient, retry later)");
  EXPECT_EQ(trans[1].first, 0);
  EXPECT_TRUE(trans[1].second.is_null());

  // The broker asked the transient member twice: at the first assignment and after its back-off.
  std::map<std::string, int> asked;
  for (const auto& r : of(cap, 88, "response"))
    if (r["body"]["topologyDescriptionRequired"] == true) {
      const json* q = request_of(cap, r);
      ASSERT_NE(q, nullptr);
      asked[q->at("body")["groupId"]]++;
    }
  EXPECT_EQ(asked["orders-app-permanent"], 1);
  EXPECT_EQ(asked["orders-app-transient"], 2);

  for (const char* group : {"orders-app-permanent", "orders-app-transient"}) {
    auto m = members_of(cap, group);
    ASSERT_EQ(m.size(), 1u) << group;
    expect_rising(granted_epochs(cap, m[0]), group);
  }
}

TEST(OldClientCapture, StreamsFourThreeSpeaksHeartbeatV0) {
  const std::string cap = "old-client.pcapng";
  auto hb = of(cap, 88, "request");
  ASSERT_FALSE(hb.empty());
  for (const auto& q : hb) {
    EXPECT_EQ(q["apiVersion"], 0);
    EXPECT_EQ(q["body"]["groupId"], "orders-app-43");
  }
  for (const auto& r : of(cap, 88, "response")) {
    EXPECT_EQ(r["apiVersion"], 0);
    EXPECT_FALSE(r["body"].contains("topologyDescriptionRequired")) << "a v1 field";
  }
  auto members = members_of(cap, "orders-app-43");
  ASSERT_EQ(members.size(), 1u);
  expect_rising(granted_epochs(cap, members[0]), "4.3.1 member");
  EXPECT_TRUE(of(cap, 93, "request").empty()) << "a v0 member is never asked for its topology description";

  std::set<int> describe_versions;
  for (const auto& r : of(cap, 89, "response")) {
    describe_versions.insert(r["apiVersion"].get<int>());
    EXPECT_EQ(r["body"]["groups"][0]["groupId"], "orders-app-43");
    if (r["apiVersion"] == 1) {
      EXPECT_EQ(r["body"]["groups"][0]["assignorName"], "sticky");
    }
  }
  EXPECT_EQ(describe_versions, (std::set<int>{0, 1})) << "4.3.1 Admin (v0) and 4.4.0 Admin (v1)";
  auto del = of(cap, 42, "response");
  ASSERT_EQ(del.size(), 1u);
  EXPECT_EQ(del[0]["apiVersion"], 2);
  EXPECT_EQ(del[0]["body"]["results"][0]["errorCode"], 0);
  EXPECT_FALSE(del[0]["body"]["results"][0].contains("errorMessage")) << "ErrorMessage is v3+";
}

TEST(TopologyUpgradeCapture, RejectedUpdateNewPushAndStaleTopology) {
  const std::string cap = "topology-upgrade.pcapng";
  // v3 (a new state store) joins the existing group: rejected.
  int rejected = 0;
  for (const auto& r : of(cap, 88, "response"))
    if (r["body"]["errorCode"] == 42) {
      ++rejected;
      EXPECT_EQ(r["body"]["errorMessage"], "Topology updates are not supported yet.");
    }
  EXPECT_EQ(rejected, 1) << "INVALID_REQUEST for the changed topology";

  // Two pushes at topology epoch 0: v1's appendix topology, and v3's after the group was deleted.
  auto pushes = of(cap, 93, "request");
  ASSERT_EQ(pushes.size(), 2u);
  auto v1 = nodes_by_name(pushes[0]["body"]["topologyDescription"]["subtopologies"][0]);
  auto v3 = nodes_by_name(pushes[1]["body"]["topologyDescription"]["subtopologies"][0]);
  EXPECT_EQ(pushes[1]["body"]["topologyEpoch"], 0);
  EXPECT_EQ(v1.size(), 3u);
  EXPECT_EQ(v1["KSTREAM-FILTER-0000000001"]["successors"], json({"KSTREAM-SINK-0000000002"}));
  EXPECT_EQ(v3["KSTREAM-FILTER-0000000001"]["successors"], json({"KSTREAM-MAPVALUES-0000000002"}));
  ASSERT_TRUE(v3.count("latest-order-table"));
  EXPECT_EQ(v3["latest-order-table"]["stores"], json({"latest-order"}));
  for (const auto& r : of(cap, 93, "response")) EXPECT_EQ(r["body"]["errorCode"], 0);

  // A hand-built member sets topology epoch 1; the next Streams member (epoch 0) is told STALE_TOPOLOGY.
  bool raw_epoch1 = false;
  for (const auto& q : of(cap, 88, "request"))
    if (q["header"]["clientId"] == "kwire-raw-streams-member" && q["body"]["memberEpoch"] == 0)
      raw_epoch1 = q["body"]["topology"]["epoch"] == 1;
  EXPECT_TRUE(raw_epoch1);
  int stale = 0;
  for (const auto& r : of(cap, 88, "response"))
    for (const auto& s : r["body"]["status"])
      if (s["statusCode"] == 0) {
        ++stale;
        EXPECT_EQ(s["statusDetail"], "The member's topology epoch 0 is behind the group's topology epoch 1.");
      }
  EXPECT_GT(stale, 0) << "STALE_TOPOLOGY status";
  auto last = of(cap, 89, "response").back()["body"]["groups"][0];
  EXPECT_EQ(last["topology"]["epoch"], 1);
  EXPECT_EQ(last["members"][0]["topologyEpoch"], 0);
}
