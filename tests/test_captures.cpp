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
                                            "plugin-failures.pcapng", "old-client.pcapng", "topology-upgrade.pcapng",
                                            "txn-consumer.pcapng",  "classic-consumer.pcapng", "other-clients.pcapng",
                                            "go-clients.pcapng", "cluster.pcapng", "aged-records.pcapng",
                                            "share-group.pcapng"};

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

// Bytes of a base64 string (record keys and values in -T json), as text.
std::string unbase64(const json& v) {
  if (!v.is_string()) return "<null>";
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : v.get<std::string>()) {
    auto i = alphabet.find(c);
    if (i == std::string::npos) continue;  // '=' padding
    acc = (acc << 6) | static_cast<unsigned>(i);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// transactional id -> (producer id, epoch) from the successful InitProducerId exchanges.
std::map<std::string, std::pair<int64_t, int>> producer_ids(const std::string& name) {
  std::map<std::string, std::pair<int64_t, int>> out;
  for (const auto& r : of(name, 22, "response")) {
    if (r["body"]["errorCode"] != 0) continue;
    const json* q = request_of(name, r);
    if (q == nullptr || !q->at("body")["transactionalId"].is_string()) continue;
    out[q->at("body")["transactionalId"]] = {r["body"]["producerId"].get<int64_t>(), r["body"]["producerEpoch"].get<int>()};
  }
  return out;
}

// The id Metadata responses give a topic.
std::string topic_id(const std::string& name, const std::string& topic) {
  for (const auto& r : of(name, 3, "response"))
    for (const auto& t : r["body"]["topics"])
      if (t["name"] == topic && t["topicId"].is_string()) return t["topicId"];
  return "";
}

// Requests whose response has error code 0 (retried ones are left out), in capture order.
std::vector<json> succeeded(const std::string& name, int api_key) {
  std::vector<json> out;
  for (const auto& r : of(name, api_key, "response")) {
    if (r["body"]["errorCode"] != 0) continue;
    const json* q = request_of(name, r);
    if (q != nullptr) out.push_back(*q);
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a["message"] < b["message"]; });
  return out;
}

// Scenario txn-consumer (TxnConsumerScenario.java): record j of source transaction t
// has key "t<t>-<j>", goes to partition j % 3 of txn-in, carries the timestamp
// 2025-01-01T00:00:00Z + t min + j s; transactions 2 and 4 (3 records) are aborted,
// 1, 3 and 5 (6 records) committed. The app copies each committed record to the
// same partition of txn-out with value "processed <value>" and the same timestamp.
constexpr int64_t kTxnBaseTimestamp = 1735689600000;
constexpr int kTxnSourceRecords = 6 + 3 + 6 + 3 + 6;
constexpr int kTxnCommittedRecords = 6 + 6 + 6;

// Responses without their request that are the first message of their
// connection; fails the test for any other unmatched response.
int answers_before_the_capture(const std::string& name) {
  std::set<std::string> seen;
  int n = 0;
  for (const auto& m : messages(name)) {
    const std::string a = m["src"], b = m["dst"];
    const std::string conn = a < b ? a + " " + b : b + " " + a;
    const bool first = seen.insert(conn).second;
    if (!m.value("unmatched", false)) continue;
    EXPECT_TRUE(first) << name << ": frame " << m["frame"] << " answers no request, in the middle of its connection";
    ++n;
  }
  return n;
}

// Fetch requests of a capture that no response answers.
int unanswered_fetches(const std::string& name) {
  std::set<std::tuple<std::string, std::string, int>> answered;   // (client, broker, correlation id)
  for (const auto& m : messages(name))
    if (m["direction"] == "response" && m["apiKey"] == 1) answered.emplace(m["dst"], m["src"], m["correlationId"]);
  int n = 0;
  for (const auto& m : messages(name))
    if (m["direction"] == "request" && m["apiKey"] == 1) n += answered.count({m["src"], m["dst"], m["correlationId"]}) ? 0 : 1;
  return n;
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
    // kcat sends a last Metadata request as it exits and does not wait for the answer;
    // a franz-go consumer may close its connection with a Fetch long-poll outstanding.
    int unanswered = name == "other-clients.pcapng" ? 1 : 0;
    if (name == "go-clients.pcapng" || name == "cluster.pcapng") unanswered = unanswered_fetches(name);
    // A cluster's capture starts while its brokers' connections to the
    // controllers are open: the first answer seen on such a connection is to
    // a request sent before the capture began. Nothing else is unmatched.
    const int unmatched = name == "cluster.pcapng" ? answers_before_the_capture(name) : 0;
    EXPECT_EQ(std::stoi(m[2]) - unanswered, std::stoi(m[3]) - unmatched) << name << ": every request has its response";
    EXPECT_EQ(std::stoi(m[4]), unmatched) << name << ": unmatched";
    EXPECT_EQ(m[5], "0") << name << ": malformed";
  }
}

TEST(Captures, TogetherTheyHoldEveryStreamsGroupRpc) {
  std::set<std::tuple<int, int, std::string>> seen;
  bool update_ok = false, update_failed = false, delete_ok = false, delete_failed = false;
  for (const auto& name : kCaptures) {
    for (const auto& m : messages(name)) {
      if (m.value("unmatched", false)) continue;   // an answer to a request sent before the capture: no api key
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

TEST(TxnConsumerCapture, ProducersWriteFixedRecordsUnderTheirProducerIdsAndEndEachTransaction) {
  const std::string cap = "txn-consumer.pcapng";
  auto pids = producer_ids(cap);
  ASSERT_TRUE(pids.count("txn-source"));
  ASSERT_TRUE(pids.count("txn-app-processor"));
  EXPECT_NE(pids["txn-source"].first, pids["txn-app-processor"].first);

  // Every Produce is transactional, and each batch carries the id and epoch its
  // producer was given, with the transactional attribute bit (0x10).
  std::map<std::string, std::pair<std::string, int64_t>> source, app;  // key -> (partition:value, timestamp)
  for (const auto& q : of(cap, 0, "request")) {
    const auto& body = q["body"];
    ASSERT_TRUE(body["transactionalId"].is_string());
    const std::string txn = body["transactionalId"];
    ASSERT_TRUE(pids.count(txn)) << txn;
    // transaction.version=1: Produce stays below v12, the first version of KIP-890 part 2.
    EXPECT_LT(q["apiVersion"].get<int>(), 12);
    for (const auto& t : body["topicData"])
      for (const auto& p : t["partitionData"])
        for (const auto& batch : p["records"]) {
          EXPECT_EQ(batch["producerId"], pids[txn].first) << txn;
          EXPECT_EQ(batch["producerEpoch"], pids[txn].second) << txn;
          EXPECT_TRUE(batch["attributes"].get<int>() & 0x10) << "transactional batch";
          for (const auto& r : batch["records"]) {
            std::string key = unbase64(r["key"]);
            auto value = std::to_string(p["index"].get<int>()) + ":" + unbase64(r["value"]);
            int64_t ts = batch["baseTimestamp"].get<int64_t>() + r["timestampDelta"].get<int64_t>();
            if (txn == "txn-source") {
              EXPECT_EQ(t["name"], "txn-in");
              source[key] = {value, ts};
            } else {
              EXPECT_EQ(t["name"], "txn-out");
              app[key] = {value, ts};
            }
          }
        }
  }
  ASSERT_EQ(source.size(), static_cast<size_t>(kTxnSourceRecords));
  ASSERT_EQ(app.size(), static_cast<size_t>(kTxnCommittedRecords));
  const std::regex key_re(R"(t(\d)-(\d))");
  for (const auto& [key, v] : source) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(key, m, key_re)) << key;
    int t = std::stoi(m[1]), j = std::stoi(m[2]);
    bool aborted = t == 2 || t == 4;
    std::string want = std::to_string(j % 3) + ":txn" + m[1].str() + "/record" + m[2].str() + (aborted ? "/aborted" : "");
    EXPECT_EQ(v.first, want) << key;
    EXPECT_EQ(v.second, kTxnBaseTimestamp + t * 60000 + j * 1000) << key;
    if (aborted) {
      EXPECT_FALSE(app.count(key)) << key << " is aborted: the read_committed app never sees it";
    } else {
      ASSERT_TRUE(app.count(key)) << key;
      std::string colon = std::to_string(j % 3) + ":";
      EXPECT_EQ(app[key].first, colon + "processed " + v.first.substr(colon.size())) << "same partition in txn-out";
      EXPECT_EQ(app[key].second, v.second) << "the app keeps the input timestamp";
    }
  }

  // The client adds its partitions (AddPartitionsToTxn v3); the broker, at
  // transaction.version=1, only verifies them before appending (v5, VerifyOnly).
  std::map<std::string, std::set<std::string>> added;
  for (const auto& r : of(cap, 24, "response")) {
    if (r["apiVersion"].get<int>() > 3) continue;
    const json* q = request_of(cap, r);
    ASSERT_NE(q, nullptr);
    const std::string txn = q->at("body")["v3AndBelowTransactionalId"];
    EXPECT_EQ(q->at("body")["v3AndBelowProducerId"], pids[txn].first);
    for (const auto& t : r["body"]["resultsByTopicV3AndBelow"])
      for (const auto& p : t["resultsByPartition"])
        if (p["partitionErrorCode"] == 0)
          added[txn].insert(t["name"].get<std::string>() + "-" + std::to_string(p["partitionIndex"].get<int>()));
  }
  EXPECT_EQ(added["txn-source"], (std::set<std::string>{"txn-in-0", "txn-in-1", "txn-in-2"}));
  EXPECT_EQ(added["txn-app-processor"], (std::set<std::string>{"txn-out-0", "txn-out-1", "txn-out-2"}));
  int verified = 0;
  for (const auto& q : of(cap, 24, "request"))
    if (q["apiVersion"].get<int>() >= 4)
      for (const auto& t : q["body"]["transactions"]) {
        ++verified;
        EXPECT_EQ(t["verifyOnly"], true);
        EXPECT_EQ(t["producerId"], pids[t["transactionalId"]].first);
      }
  EXPECT_GT(verified, 0) << "the broker verifies transactional appends";

  // EndTxn: the source commits, aborts, commits, aborts, commits; the app commits twice.
  // The coordinator writes the markers in the same order (WriteTxnMarkers).
  std::map<std::string, std::vector<bool>> ends;
  for (const auto& q : succeeded(cap, 26)) {
    const std::string txn = q["body"]["transactionalId"];
    EXPECT_EQ(q["body"]["producerId"], pids[txn].first);
    ends[txn].push_back(q["body"]["committed"]);
  }
  EXPECT_EQ(ends["txn-source"], (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(ends["txn-app-processor"], (std::vector<bool>{true, true}));
  std::vector<bool> source_markers;
  for (const auto& q : of(cap, 27, "request"))
    for (const auto& m : q["body"]["markers"])
      if (m["producerId"] == pids["txn-source"].first) source_markers.push_back(m["transactionResult"]);
  EXPECT_EQ(source_markers, ends["txn-source"]);
}

TEST(TxnConsumerCapture, OffsetsCommitInTheAppsTransactionsUnderTheMembersEpoch) {
  const std::string cap = "txn-consumer.pcapng";
  auto pids = producer_ids(cap);
  const auto app = pids["txn-app-processor"];

  // One KIP-848 member: joins with epoch 0 subscribing to txn-in, leaves with -1.
  std::vector<json> hb;
  for (const auto& q : of(cap, 68, "request"))
    if (q["body"]["groupId"] == "txn-app") hb.push_back(q);
  ASSERT_GE(hb.size(), 3u);
  const std::string member = hb.front()["body"]["memberId"];
  for (const auto& q : hb) EXPECT_EQ(q["body"]["memberId"], member) << "a single member";
  EXPECT_EQ(hb.front()["body"]["memberEpoch"], 0);
  EXPECT_EQ(hb.front()["body"]["subscribedTopicNames"], json({"txn-in"}));
  EXPECT_EQ(hb.back()["body"]["memberEpoch"], -1) << "leaves the group on close";
  std::set<int> granted;
  bool left = false, assigned = false;
  const std::string txn_in = topic_id(cap, "txn-in");
  ASSERT_FALSE(txn_in.empty());
  for (const auto& r : of(cap, 68, "response")) {
    EXPECT_EQ(r["body"]["errorCode"], 0);
    if (r["body"]["memberId"] != member) continue;
    int epoch = r["body"]["memberEpoch"];
    if (epoch > 0) granted.insert(epoch);
    if (epoch == -1) left = true;
    // Alone in the group: all three partitions of txn-in, by topic id.
    const auto& a = r["body"]["assignment"];
    if (a.is_object() && !a["topicPartitions"].empty()) {
      assigned = true;
      ASSERT_EQ(a["topicPartitions"].size(), 1u);
      EXPECT_EQ(a["topicPartitions"][0]["topicId"], txn_in);
      EXPECT_EQ(a["topicPartitions"][0]["partitions"], json({0, 1, 2}));
    }
  }
  EXPECT_FALSE(granted.empty());
  EXPECT_TRUE(left) << "the broker answers the leave with epoch -1";
  EXPECT_TRUE(assigned);

  // sendOffsetsToTransaction, twice: AddOffsetsToTxn for the group, then TxnOffsetCommit
  // with the consumer's member id and an epoch the broker handed out. The offsets are
  // the last consumed record + 1: 2 after round 1 (records at 0-1, txn 2 aborted at 3),
  // 12 after round 2 (txn 5's records at 10-11); leader epoch 0 of the fresh topic.
  auto adds = succeeded(cap, 25);
  ASSERT_EQ(adds.size(), 2u);
  for (const auto& q : adds) {
    EXPECT_EQ(q["body"]["transactionalId"], "txn-app-processor");
    EXPECT_EQ(q["body"]["groupId"], "txn-app");
    EXPECT_EQ(q["body"]["producerId"], app.first);
  }
  auto commits = of(cap, 28, "request");
  ASSERT_EQ(commits.size(), 2u);
  const int64_t want[] = {2, 12};
  for (size_t i = 0; i < commits.size(); ++i) {
    const auto& body = commits[i]["body"];
    EXPECT_GT(commits[i]["frame"], adds[i]["frame"]) << "AddOffsetsToTxn comes first";
    EXPECT_EQ(body["transactionalId"], "txn-app-processor");
    EXPECT_EQ(body["groupId"], "txn-app");
    EXPECT_EQ(body["producerId"], app.first);
    EXPECT_EQ(body["producerEpoch"], app.second);
    EXPECT_EQ(body["memberId"], member);
    EXPECT_TRUE(granted.count(body["generationIdOrMemberEpoch"].get<int>()))
        << "member epoch " << body["generationIdOrMemberEpoch"] << " was granted in a heartbeat";
    ASSERT_EQ(body["topics"].size(), 1u);
    EXPECT_EQ(body["topics"][0]["name"], "txn-in");
    std::set<int> parts;
    for (const auto& p : body["topics"][0]["partitions"]) {
      parts.insert(p["partitionIndex"].get<int>());
      EXPECT_EQ(p["committedOffset"], want[i]);
      EXPECT_EQ(p["committedLeaderEpoch"], 0);
    }
    EXPECT_EQ(parts, (std::set<int>{0, 1, 2}));
  }
  for (const auto& r : of(cap, 28, "response"))
    for (const auto& t : r["body"]["topics"])
      for (const auto& p : t["partitions"]) EXPECT_EQ(p["errorCode"], 0);

  // Joined without offsets: the consumer asks for stable offsets (read_committed),
  // gets none, and looks up the earliest ones.
  bool asked = false;
  for (const auto& q : of(cap, 9, "request"))
    if (q["header"]["clientId"] == "kwire-txn-app-consumer") {
      asked = true;
      EXPECT_EQ(q["body"]["requireStable"], true);
    }
  EXPECT_TRUE(asked);
  bool earliest = false;
  for (const auto& q : of(cap, 2, "request"))
    if (q["header"]["clientId"] == "kwire-txn-app-consumer") {
      earliest = true;
      EXPECT_EQ(q["body"]["isolationLevel"], 1);
      for (const auto& p : q["body"]["topics"][0]["partitions"]) EXPECT_EQ(p["timestamp"], -2);
    }
  EXPECT_TRUE(earliest);

  // Admin afterwards (CheckConsumerGroup): the group is Empty, 12 committed everywhere.
  auto described = of(cap, 69, "response");
  ASSERT_EQ(described.size(), 1u);
  EXPECT_EQ(described[0]["body"]["groups"][0]["groupState"], "Empty");
  EXPECT_TRUE(described[0]["body"]["groups"][0]["members"].empty());
  int final_offsets = 0;
  for (const auto& r : of(cap, 9, "response")) {
    const json* q = request_of(cap, r);
    ASSERT_NE(q, nullptr);
    if (q->at("header")["clientId"] != "kwire-check-group") continue;
    for (const auto& t : r["body"]["groups"][0]["topics"])
      for (const auto& p : t["partitions"]) {
        ++final_offsets;
        EXPECT_EQ(p["committedOffset"], 12);
      }
  }
  EXPECT_EQ(final_offsets, 3);
}

TEST(TxnConsumerCapture, ReadCommittedFetchSessionSeesEveryOffsetAndTheAbortedTransactions) {
  const std::string cap = "txn-consumer.pcapng";
  const int64_t source = producer_ids(cap)["txn-source"].first;
  const std::string txn_in = topic_id(cap, "txn-in");
  ASSERT_FALSE(txn_in.empty());

  // One incremental fetch session: opened with id 0 / epoch 0, then the broker's
  // session id with epochs 1, 2, 3, ..., closed with epoch -1; topics by id.
  std::vector<json> fetches;
  for (const auto& q : of(cap, 1, "request"))
    if (q["header"]["clientId"] == "kwire-txn-app-consumer") fetches.push_back(q);
  ASSERT_GE(fetches.size(), 4u);
  EXPECT_EQ(fetches.front()["body"]["sessionId"], 0);
  EXPECT_EQ(fetches.front()["body"]["sessionEpoch"], 0);
  int64_t session = -1;
  for (const auto& r : of(cap, 1, "response")) {
    const json* q = request_of(cap, r);
    if (q != nullptr && q->at("frame") == fetches.front()["frame"]) session = r["body"]["sessionId"];
  }
  ASSERT_GT(session, 0) << "the broker opened a session";
  for (size_t i = 0; i < fetches.size(); ++i) {
    const auto& body = fetches[i]["body"];
    EXPECT_EQ(body["isolationLevel"], 1) << "read_committed";
    for (const auto& t : body["topics"]) EXPECT_EQ(t["topicId"], txn_in);
    if (i == 0) continue;
    EXPECT_EQ(body["sessionId"], session);
    if (i + 1 < fetches.size()) { EXPECT_EQ(body["sessionEpoch"], static_cast<int>(i)); }
  }
  EXPECT_EQ(fetches.back()["body"]["sessionEpoch"], -1) << "the consumer closes its session";

  // What the broker returned, per partition of txn-in: every offset 0-12 (the consumer
  // reads up to the last stable offset), control batches (0x20) for the five markers,
  // and the source's aborted transactions (2 and 4) listed from their first offsets.
  std::map<int, std::set<int64_t>> offsets, markers, aborted_from;
  int64_t high = 0;
  for (const auto& r : of(cap, 1, "response")) {
    const json* q = request_of(cap, r);
    if (q == nullptr || q->at("header")["clientId"] != "kwire-txn-app-consumer") continue;
    for (const auto& t : r["body"]["responses"]) {
      EXPECT_EQ(t["topicId"], txn_in);
      for (const auto& p : t["partitions"]) {
        int part = p["partitionIndex"];
        high = std::max(high, p["highWatermark"].get<int64_t>());
        if (p["abortedTransactions"].is_array())
          for (const auto& a : p["abortedTransactions"]) {
            EXPECT_EQ(a["producerId"], source);
            aborted_from[part].insert(a["firstOffset"].get<int64_t>());
          }
        if (!p["records"].is_array()) continue;
        for (const auto& b : p["records"]) {
          int64_t base = b["baseOffset"];
          for (int64_t o = base; o <= base + b["lastOffsetDelta"].get<int64_t>(); ++o) offsets[part].insert(o);
          if (b["attributes"].get<int>() & 0x20) markers[part].insert(base);
          EXPECT_EQ(b["producerId"], source);
        }
      }
    }
  }
  std::set<int64_t> all;
  for (int64_t o = 0; o <= 12; ++o) all.insert(o);
  for (int part = 0; part < 3; ++part) {
    EXPECT_EQ(offsets[part], all) << "partition " << part;
    EXPECT_EQ(markers[part], (std::set<int64_t>{2, 4, 7, 9, 12})) << "partition " << part;
    EXPECT_EQ(aborted_from[part], (std::set<int64_t>{3, 8})) << "partition " << part;
  }
  EXPECT_EQ(high, 13);
}

// Scenario go-clients (testbed/go-clients/main.go, sarama.go): franz-go producer
// kgo-producer-<codec> writes records "<codec>-order-<i> ..." (key k<i % 5>, i < 10)
// to go-orders with that codec; Sarama's producers write "default-gzip-order-<i>" (at
// its default protocol version) and "max-zstd-order-<i>" (at sarama.MaxVersion) to
// sarama-orders. Codec ids of the batch attributes (Kafka's record batch format):
// gzip 1, snappy 2, lz4 3, zstd 4.
namespace {

struct ProducedBy {
  std::set<int> codecs;             // attributes & 7 of every batch
  std::vector<std::string> values;  // record values, in capture order
  std::set<int> versions;           // Produce versions
};

std::map<std::string, ProducedBy> produced_by_client(const std::string& name) {
  std::map<std::string, ProducedBy> out;
  for (const auto& q : of(name, 0, "request")) {
    auto& p = out[q["header"]["clientId"].get<std::string>()];
    p.versions.insert(q["apiVersion"].get<int>());
    for (const auto& t : q["body"]["topicData"])
      for (const auto& part : t["partitionData"])
        for (const auto& batch : part["records"]) {
          p.codecs.insert(batch["attributes"].get<int>() & 7);
          for (const auto& r : batch["records"]) {
            std::string value = unbase64(r["value"]);
            const auto dash = value.rfind("-order-");
            const std::string i = dash == std::string::npos ? "" : value.substr(dash + 7, 1);
            EXPECT_EQ(unbase64(r["key"]), i.empty() ? "?" : "k" + std::to_string(std::stoi(i) % 5)) << value;
            p.values.push_back(value);
          }
        }
  }
  return out;
}

// The offset each partition of a group last committed (successful commits only):
// "topic name or id/partition" -> offset.
std::map<std::string, int64_t> committed(const std::string& name, const std::string& group) {
  std::map<std::string, int64_t> out;
  for (const auto& r : of(name, 8, "response")) {
    const json* q = request_of(name, r);
    if (q == nullptr || q->at("body")["groupId"] != group) continue;
    for (const auto& t : q->at("body")["topics"]) {
      const std::string topic = t.contains("topicId") ? t["topicId"].get<std::string>() : t["name"].get<std::string>();
      for (const auto& p : t["partitions"]) out[topic + "/" + std::to_string(p["partitionIndex"].get<int>())] = p["committedOffset"];
    }
    for (const auto& t : r["body"]["topics"])
      for (const auto& p : t["partitions"]) EXPECT_EQ(p["errorCode"], 0) << group << " commit";
  }
  return out;
}

int join_groups_of(const std::string& name, const std::string& group) {
  int n = 0;
  for (const auto& q : of(name, 11, "request")) n += q["body"]["groupId"] == group ? 1 : 0;
  return n;
}

int64_t total(const std::map<std::string, int64_t>& offsets) {
  int64_t n = 0;
  for (const auto& [k, v] : offsets) n += v;
  return n;
}

}  // namespace

TEST(GoClientsCapture, EveryCodecCompressesItsBatchesAndSaramaSpeaksTwoVersions) {
  const std::string cap = "go-clients.pcapng";
  auto by = produced_by_client(cap);
  const std::vector<std::pair<std::string, int>> codecs = {{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}};
  for (const auto& [codec, id] : codecs) {
    SCOPED_TRACE(codec);
    const auto& p = by["kgo-producer-" + codec];
    EXPECT_EQ(p.codecs, std::set<int>{id});
    std::set<std::string> got;
    for (const auto& v : p.values) got.insert(v.substr(0, v.find(' ')));
    std::set<std::string> want;
    for (int i = 0; i < 10; ++i) want.insert(codec + "-order-" + std::to_string(i));
    EXPECT_EQ(p.values.size(), 10u);
    EXPECT_EQ(got, want);
  }
  const auto& def = by["sarama-default-producer"];
  const auto& max = by["sarama-max-producer"];
  EXPECT_EQ(def.codecs, std::set<int>{1});
  EXPECT_EQ(max.codecs, std::set<int>{4});
  EXPECT_EQ(def.values.size(), 10u);
  EXPECT_EQ(max.values.size(), 10u);
  std::set<std::string> def_values(def.values.begin(), def.values.end()), want_def;
  std::set<std::string> max_values(max.values.begin(), max.values.end()), want_max;
  for (int i = 0; i < 10; ++i) {
    want_def.insert("default-gzip-order-" + std::to_string(i));
    want_max.insert("max-zstd-order-" + std::to_string(i));
  }
  EXPECT_EQ(def_values, want_def);
  EXPECT_EQ(max_values, want_max);
  // sarama.MaxVersion (4.3.1) asks for newer Produce and JoinGroup versions than the default (2.8.0).
  ASSERT_FALSE(def.versions.empty());
  ASSERT_FALSE(max.versions.empty());
  EXPECT_LT(*def.versions.rbegin(), *max.versions.begin());
  std::map<std::string, std::set<int>> join_versions;
  for (const auto& q : of(cap, 11, "request")) join_versions[q["body"]["groupId"]].insert(q["apiVersion"].get<int>());
  ASSERT_EQ(join_versions["sarama-default"].size(), 1u);
  ASSERT_EQ(join_versions["sarama-max"].size(), 1u);
  EXPECT_LT(*join_versions["sarama-default"].begin(), *join_versions["sarama-max"].begin());
}

TEST(GoClientsCapture, ClassicAndKip848GroupsCommitEveryRecordThenAreDeleted) {
  const std::string cap = "go-clients.pcapng";
  const std::string orders = topic_id(cap, "go-orders");
  ASSERT_FALSE(orders.empty());

  // go-classic: JoinGroup with the cooperative-sticky consumer protocol; commits at its generation.
  int generation = -1;
  for (const auto& r : of(cap, 11, "response")) {
    const json* q = request_of(cap, r);
    ASSERT_NE(q, nullptr);
    if (q->at("body")["groupId"] != "go-classic") continue;
    EXPECT_EQ(q->at("body")["protocolType"], "consumer");
    EXPECT_EQ(q->at("body")["protocols"][0]["name"], "cooperative-sticky");
    if (r["body"]["errorCode"] == 0) generation = r["body"]["generationId"];
  }
  EXPECT_GE(generation, 1);

  // go-848: ConsumerGroupHeartbeat only (no JoinGroup): joins at epoch 0, is given all three
  // partitions of go-orders at a positive epoch, leaves with epoch -1.
  std::vector<json> beats;
  for (const auto& q : of(cap, 68, "request"))
    if (q["body"]["groupId"] == "go-848") beats.push_back(q);
  ASSERT_GE(beats.size(), 2u);
  EXPECT_EQ(beats.front()["body"]["memberEpoch"], 0);
  EXPECT_EQ(beats.front()["body"]["subscribedTopicNames"], json({"go-orders"}));
  EXPECT_EQ(beats.back()["body"]["memberEpoch"], -1);
  EXPECT_EQ(join_groups_of(cap, "go-848"), 0);
  std::set<int> epochs;
  std::set<int> assigned;
  for (const auto& r : of(cap, 68, "response")) {
    if (r["body"]["errorCode"] != 0 || r["body"]["memberEpoch"] <= 0) continue;
    epochs.insert(r["body"]["memberEpoch"].get<int>());
    if (!r["body"]["assignment"].is_object()) continue;
    for (const auto& t : r["body"]["assignment"]["topicPartitions"]) {
      EXPECT_EQ(t["topicId"], orders);
      for (const auto& p : t["partitions"]) assigned.insert(p.get<int>());
    }
  }
  EXPECT_FALSE(epochs.empty());
  EXPECT_EQ(assigned, (std::set<int>{0, 1, 2}));

  for (const auto& q : of(cap, 8, "request")) {
    const auto& b = q["body"];
    if (b["groupId"] == "go-classic") {
      EXPECT_EQ(b["generationIdOrMemberEpoch"], generation);
    } else if (b["groupId"] == "go-848") {
      EXPECT_TRUE(epochs.count(b["generationIdOrMemberEpoch"].get<int>())) << b.dump();
    }
  }
  // 40 records in go-orders, 10 and then 20 in sarama-orders when each Sarama group reads.
  EXPECT_EQ(total(committed(cap, "go-classic")), 40);
  EXPECT_EQ(total(committed(cap, "go-848")), 40);
  EXPECT_EQ(total(committed(cap, "sarama-default")), 10);
  EXPECT_EQ(total(committed(cap, "sarama-max")), 20);

  std::map<std::string, int> deleted;
  for (const auto& r : of(cap, 42, "response"))
    for (const auto& g : r["body"]["results"]) deleted[g["groupId"]] = g["errorCode"];
  EXPECT_EQ(deleted, (std::map<std::string, int>{{"go-classic", 0}, {"go-848", 0}}));
  std::map<std::string, int> topics;
  for (const auto& r : of(cap, 20, "response"))
    for (const auto& t : r["body"]["responses"]) topics[t["name"]] = t["errorCode"];
  EXPECT_EQ(topics, (std::map<std::string, int>{{"go-scratch", 0}}));
}

// Scenario aged-records (AgedRecordsScenario.java): record i (key "k<i>", value
// "aged-<i>") goes to partition i % 2 at offset i / 2 with timestamp T + i s, T
// being 30 days before the scenario ran; offsetsForTimes(T + 5 s) finds records 6
// (partition 0, offset 3) and 5 (partition 1, offset 2); Admin lists earliest 0,
// latest 10 and max timestamp 9 on both partitions.
TEST(AgedRecordsCapture, RecordsAreThirtyDaysOlderThanTheirProduceAndFoundByTime) {
  const std::string cap = "aged-records.pcapng";
  constexpr int64_t kThirtyDays = 30LL * 86'400'000;
  std::map<int, std::pair<int, int64_t>> records;  // i -> (partition, timestamp)
  for (const auto& q : of(cap, 0, "request")) {
    const auto sent_ms = static_cast<int64_t>(q["time"].get<double>() * 1000);
    for (const auto& t : q["body"]["topicData"])
      for (const auto& p : t["partitionData"])
        for (const auto& batch : p["records"]) {
          EXPECT_EQ(batch["attributes"].get<int>() & 0x08, 0) << "CreateTime";
          for (const auto& r : batch["records"]) {
            const int i = std::stoi(unbase64(r["key"]).substr(1));
            EXPECT_EQ(unbase64(r["value"]), "aged-" + std::to_string(i));
            const int64_t ts = batch["baseTimestamp"].get<int64_t>() + r["timestampDelta"].get<int64_t>();
            records[i] = {p["index"].get<int>(), ts};
            // Sent about 30 days after the time it carries (the producer ran for seconds).
            EXPECT_GT(sent_ms - ts, kThirtyDays - 60'000) << "record " << i;
            EXPECT_LT(sent_ms - ts, kThirtyDays + 60'000) << "record " << i;
          }
        }
  }
  ASSERT_EQ(records.size(), 20u);
  const int64_t base = records.at(0).second;
  for (const auto& [i, pt] : records) {
    EXPECT_EQ(pt.first, i % 2) << i;
    EXPECT_EQ(pt.second, base + i * 1000) << i;
  }
  // ListOffsets: by time (T + 5 s), earliest (-2), latest (-1), max timestamp (-3).
  std::map<int64_t, std::set<std::tuple<int, int64_t, int64_t>>> answers;  // asked -> (partition, offset, timestamp)
  for (const auto& r : of(cap, 2, "response")) {
    const json* q = request_of(cap, r);
    ASSERT_NE(q, nullptr);
    std::map<int, int64_t> asked;
    for (const auto& p : (*q)["body"]["topics"][0]["partitions"]) asked[p["partitionIndex"]] = p["timestamp"];
    for (const auto& p : r["body"]["topics"][0]["partitions"]) {
      EXPECT_EQ(p["errorCode"], 0);
      answers[asked.at(p["partitionIndex"])].insert({p["partitionIndex"].get<int>(), p["offset"].get<int64_t>(), p["timestamp"].get<int64_t>()});
    }
  }
  using Set = std::set<std::tuple<int, int64_t, int64_t>>;
  EXPECT_EQ(answers[base + 5000], (Set{{0, 3, base + 6000}, {1, 2, base + 5000}}));
  EXPECT_EQ(answers[-2], (Set{{0, 0, -1}, {1, 0, -1}}));
  EXPECT_EQ(answers[-1], (Set{{0, 10, -1}, {1, 10, -1}}));
  EXPECT_EQ(answers[-3], (Set{{0, 9, base + 18000}, {1, 9, base + 19000}}));
}

// Scenario production (ProductionScenario.java; testbed/run-cluster 5 with nodes 1-3
// broker+controller and 4-5 broker-only, racks r1,r2,r3,r1,r2, the rack-aware replica
// selector): every client on SASL_SSL with SCRAM-SHA-512, decrypted here with the key
// log in the -secrets file's blocks, beside the brokers' own connections on the
// PLAINTEXT and CONTROLLER listeners (captures/MANIFEST.md). What the scenario does,
// not where this run put the leaders: a regenerated capture passes too.
namespace {
namespace production {

const std::string kCap = "tls/production-secrets.pcapng";

// node id -> "host:port" and rack, from the Metadata answers (the SASL_SSL listener).
struct Node {
  std::string address, rack;
  bool operator==(const Node&) const = default;
};
std::map<int, Node> nodes() {
  std::map<int, Node> out;
  for (const auto& r : of(kCap, 3, "response"))
    for (const auto& b : r["body"]["brokers"])
      out[b["nodeId"]] = {b["host"].get<std::string>() + ":" + std::to_string(b["port"].get<int>()),
                          b["rack"].is_string() ? b["rack"].get<std::string>() : ""};
  return out;
}

std::string host(const std::string& endpoint) { return endpoint.substr(0, endpoint.rfind(':')); }

}  // namespace production
}  // namespace

TEST(ProductionCapture, FiveBrokersInThreeRacksAndEveryClientLogsInWithScramSha512) {
  using production::kCap;
  const auto nodes = production::nodes();
  ASSERT_EQ(nodes.size(), 5u);
  const std::map<int, std::string> racks = {{1, "r1"}, {2, "r2"}, {3, "r3"}, {4, "r1"}, {5, "r2"}};
  for (const auto& [id, n] : nodes) EXPECT_EQ(n.rack, racks.at(id)) << "node " << id;
  // Every Metadata answer lists all five.
  for (const auto& r : of(kCap, 3, "response")) EXPECT_EQ(r["body"]["brokers"].size(), 5u) << r["frame"];

  // One SCRAM-SHA-512 login per client connection, each accepted.
  std::set<std::pair<std::string, std::string>> client_conns, logins;
  for (const auto& m : messages(kCap))
    if (m["direction"] == "request" && m["apiKey"] != 36 && m["apiKey"] != 17 &&
        std::any_of(nodes.begin(), nodes.end(), [&](const auto& n) { return n.second.address == m["dst"]; }))
      client_conns.insert({m["src"].get<std::string>(), m["dst"].get<std::string>()});
  for (const auto& q : of(kCap, 17, "request")) {
    EXPECT_EQ(q["body"]["mechanism"], "SCRAM-SHA-512") << q["frame"];
    logins.insert({q["src"].get<std::string>(), q["dst"].get<std::string>()});
  }
  EXPECT_GT(client_conns.size(), 20u);
  EXPECT_EQ(logins, client_conns);
  const auto auths = of(kCap, 36, "response");
  EXPECT_EQ(auths.size(), 2 * logins.size());
  for (const auto& r : auths) EXPECT_EQ(r["body"]["errorCode"], 0) << r["frame"];

  // The controller listener is on nodes 1-3 only; its leader serves the quorum's fetches
  // to every other node, broker-only nodes 4 and 5 (observers) among them, and every
  // broker heartbeats to it.
  std::set<std::string> controller_hosts;
  std::set<int> raft_clients, heartbeats;
  for (const auto& q : of(kCap, 63, "request")) {
    heartbeats.insert(q["body"]["brokerId"].get<int>());
    controller_hosts.insert(production::host(q["dst"]));
  }
  EXPECT_EQ(heartbeats, (std::set<int>{1, 2, 3, 4, 5}));
  ASSERT_EQ(controller_hosts.size(), 1u);
  int leader = 0;
  for (const auto& [id, n] : nodes)
    if (production::host(n.address) == *controller_hosts.begin()) leader = id;
  EXPECT_GE(leader, 1);
  EXPECT_LE(leader, 3);
  for (const auto& q : of(kCap, 1, "request")) {
    const std::string client = q["header"]["clientId"];
    if (!client.starts_with("raft-client-")) continue;
    EXPECT_EQ(production::host(q["dst"]), *controller_hosts.begin()) << q["frame"];
    raft_clients.insert(std::stoi(client.substr(12)));
  }
  std::set<int> others = {1, 2, 3, 4, 5};
  others.erase(leader);
  EXPECT_EQ(raft_clients, others);
}

// The read_committed consumer in rack r2 (client.rack, sent in every Fetch): a leader
// outside r2 answers with the follower in r2 as preferredReadReplica, and the consumer
// then fetches that partition from that follower, which sends it records.
TEST(ProductionCapture, TheRackR2ConsumerFetchesFromTheFollowerItsLeaderNames) {
  using production::kCap;
  const auto nodes = production::nodes();
  const std::string client = "kwire-prod-payments-audit";
  int redirected = 0, served = 0;
  for (const auto& r : of(kCap, 1, "response")) {
    const json* q = request_of(kCap, r);
    if (q == nullptr || (*q)["header"]["clientId"] != client) continue;
    EXPECT_EQ((*q)["body"]["rackId"], "r2") << (*q)["frame"];
    for (const auto& t : r["body"]["responses"])
      for (const auto& p : t["partitions"]) {
        const int preferred = p["preferredReadReplica"];
        if (preferred < 0) continue;
        ++redirected;
        ASSERT_TRUE(nodes.count(preferred)) << preferred;
        const auto& follower = nodes.at(preferred);
        EXPECT_EQ(follower.rack, "r2");
        EXPECT_NE(follower.address, r["src"]) << "the leader names another node";
        // Later fetches of the same partition go to the follower, which answers with records.
        const auto partition = std::make_pair(t["topicId"].get<std::string>(), p["partitionIndex"].get<int>());
        for (const auto& a : of(kCap, 1, "response")) {
          if (a["frame"] <= r["frame"] || a["src"] != follower.address) continue;
          const json* aq = request_of(kCap, a);
          if (aq == nullptr || (*aq)["header"]["clientId"] != client) continue;
          for (const auto& at : a["body"]["responses"])
            for (const auto& ap : at["partitions"])
              if (std::make_pair(at["topicId"].get<std::string>(), ap["partitionIndex"].get<int>()) == partition &&
                  ap["errorCode"] == 0 && ap["records"].is_array() && !ap["records"].empty())
                ++served;
        }
      }
  }
  EXPECT_GE(redirected, 1);
  EXPECT_GE(served, 1);
}

// The share consumer (group prod-fulfilment, explicit acknowledgement) releases the
// first record it gets (AcknowledgeType 2, RELEASE) and accepts it (1, ACCEPT) when it
// comes again; every other record is accepted once.
TEST(ProductionCapture, TheShareConsumerReleasesOneRecordAndAcceptsItOnItsSecondDelivery) {
  using production::kCap;
  std::map<std::tuple<std::string, int, int64_t>, std::vector<int>> acks;  // (topic id, partition, offset) -> types
  for (int api : {78, 79})
    for (const auto& q : of(kCap, api, "request")) {
      EXPECT_EQ(q["body"]["groupId"], "prod-fulfilment");
      for (const auto& t : q["body"]["topics"])
        for (const auto& p : t["partitions"])
          for (const auto& b : p["acknowledgementBatches"]) {
            const auto& types = b["acknowledgeTypes"];
            const auto first = b["firstOffset"].get<int64_t>();
            for (int64_t o = first; o <= b["lastOffset"].get<int64_t>(); ++o)
              acks[{t["topicId"].get<std::string>(), p["partitionIndex"].get<int>(), o}].push_back(
                  types.size() == 1 ? types[0].get<int>() : types[static_cast<size_t>(o - first)].get<int>());
          }
    }
  int released = 0, accepted_once = 0;
  for (const auto& [record, types] : acks) {
    if (types == std::vector<int>{2, 1}) ++released;
    else if (types == std::vector<int>{1}) ++accepted_once;
    else ADD_FAILURE() << "offset " << std::get<2>(record) << " acknowledged " << json(types).dump();
  }
  EXPECT_EQ(released, 1);
  EXPECT_EQ(released + accepted_once, 30);
  for (const auto& r : of(kCap, 79, "response")) EXPECT_EQ(r["body"]["errorCode"], 0) << r["frame"];
}

// Scenario share-group (ShareGroupScenario.java): an idempotent producer
// writes record i (key "k<i>", value "record <i>") to share-in, one
// partition, one at a time, so record i is at offset i; members a
// (kwire-share-a, explicit acknowledgement) and b (kwire-share-b, implicit) of
// share group share-app take them. a releases the first record it gets, which
// is then delivered again; every record is accepted once.
namespace {
std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out += t[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += t[(v >> 18) & 63], out += t[(v >> 12) & 63], out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += t[(v >> 18) & 63], out += t[(v >> 12) & 63], out += t[(v >> 6) & 63], out += '=';
  }
  return out;
}
}  // namespace

TEST(ShareGroupCapture, BothMembersAcquireRecordsAndTheReleasedOneComesBack) {
  const std::string cap = "share-group.pcapng";
  // Answers to each member's ShareFetch requests: by correlation id and connection.
  std::map<std::tuple<std::string, std::string, int>, std::string> client_of;
  for (const auto& m : of(cap, 78, "request"))
    client_of[{m["src"], m["dst"], m["correlationId"]}] = m["header"]["clientId"];
  std::map<int64_t, int> deliveries;          // offset -> times acquired
  std::map<std::string, int> acquired_by;     // client id -> records acquired
  int keys_checked = 0;
  for (const auto& r : of(cap, 78, "response")) {
    EXPECT_EQ(r["body"]["errorCode"], 0) << r["frame"];
    const std::string client = client_of[{r["dst"], r["src"], r["correlationId"]}];
    for (const auto& t : r["body"]["responses"])
      for (const auto& p : t["partitions"]) {
        EXPECT_EQ(p["partitionIndex"], 0);
        EXPECT_EQ(p["errorCode"], 0) << r["frame"];
        EXPECT_EQ(p["acknowledgeErrorCode"], 0) << r["frame"];
        for (const auto& a : p["acquiredRecords"])
          for (int64_t o = a["firstOffset"]; o <= a["lastOffset"].get<int64_t>(); ++o) ++deliveries[o], ++acquired_by[client];
        for (const auto& batch : p["records"])
          for (const auto& rec : batch["records"]) {
            const int64_t offset = batch["baseOffset"].get<int64_t>() + rec["offsetDelta"].get<int64_t>();
            EXPECT_EQ(rec["key"], base64("k" + std::to_string(offset))) << "offset " << offset;
            EXPECT_EQ(rec["value"], base64("record " + std::to_string(offset))) << "offset " << offset;
            ++keys_checked;
          }
      }
  }
  ASSERT_EQ(deliveries.size(), 60u);
  EXPECT_EQ(deliveries.begin()->first, 0);
  EXPECT_EQ(deliveries.rbegin()->first, 59);
  EXPECT_GT(acquired_by["kwire-share-a"], 0);
  EXPECT_GT(acquired_by["kwire-share-b"], 0);
  EXPECT_EQ(keys_checked, 61);   // 60 records, one of them delivered twice
  // The one release (type 2), by member a, of the one record delivered twice.
  std::vector<int64_t> released;
  for (int api : {78, 79})
    for (const auto& m : of(cap, api, "request"))
      for (const auto& t : m["body"]["topics"])
        for (const auto& p : t["partitions"])
          for (const auto& b : p["acknowledgementBatches"]) {
            const auto& types = b["acknowledgeTypes"];
            for (int64_t o = b["firstOffset"]; o <= b["lastOffset"].get<int64_t>(); ++o) {
              const int type = types.size() == 1 ? types[0].get<int>() : types[o - b["firstOffset"].get<int64_t>()].get<int>();
              if (type != 2) continue;
              released.push_back(o);
              EXPECT_EQ(m["header"]["clientId"], "kwire-share-a") << m["frame"];
            }
          }
  ASSERT_EQ(released.size(), 1u);
  for (const auto& [offset, n] : deliveries) EXPECT_EQ(n, offset == released[0] ? 2 : 1) << "offset " << offset;
}
