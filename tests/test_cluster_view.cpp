// The cluster a client learns (replay/cluster.hpp): from the answers of a real
// single-broker capture, whose broker the testbed runs as node 1
// (testbed/run-broker: node.id=1), and from FindCoordinator answers built by
// hand from the specs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "dissector/protocol/decoder.hpp"
#include "replay/cluster.hpp"
#include "replay/recording.hpp"
#include "wire/message_builder.hpp"

namespace kwire::replay {
namespace {

const ProgramSet& ps() { return ProgramSet::release(); }

TEST(ClusterView, ASingleBrokerCaptureIsNodeOneForEveryRole) {
  Recording rec;
  std::string error;
  ASSERT_TRUE(load_recording(std::string(KWIRE_SOURCE_DIR) + "/captures/stateful.pcapng", ps(), {}, rec, error))
      << error;
  ClusterView view;
  FrameDecoder dec(ps());
  Frame req, resp;
  std::set<uint16_t> server_ports;
  size_t metadata = 0, find_coordinator = 0;
  for (const auto& s : rec.sessions) {
    server_ports.insert(s.broker.port);
    for (const auto& e : s.exchanges) {
      if (e.response.empty()) continue;
      dec.decode_request(e.request, req);
      dec.decode_response(e.response, e.api_key, e.api_version, resp);
      metadata += e.api_key == 3;
      find_coordinator += e.api_key == 10;
      view.learn(req, resp, ps());
    }
  }
  ASSERT_GT(metadata, 5u);
  ASSERT_GT(find_coordinator, 0u);
  // One broker listener is the clients' (the other port is the controller's).
  ASSERT_EQ(view.brokers().size(), 1u);
  EXPECT_EQ(view.brokers().begin()->first, 1);
  const std::string ep = view.endpoint(1);
  ASSERT_TRUE(ep.starts_with("127.0.0.1:")) << ep;
  EXPECT_TRUE(server_ports.count(static_cast<uint16_t>(std::stoi(ep.substr(10))))) << ep;
  // The scenario's topics (testbed/scenario stateful: clicks 2, pages 1, page-counts 2).
  EXPECT_EQ(view.leader("clicks", 0), 1);
  EXPECT_EQ(view.leader("clicks", 1), 1);
  EXPECT_EQ(view.leader("pages", 0), 1);
  EXPECT_EQ(view.leader("page-counts", 1), 1);
  EXPECT_EQ(view.leader("clicks", 2), ClusterView::kUnknown);
  EXPECT_EQ(view.leader("no-such-topic", 0), ClusterView::kUnknown);
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "stateful-app"), 1);
  EXPECT_EQ(view.controller(), 1);
}

// captures/cluster.pcapng: a 3-node cluster. What kwire learns from the
// clients' Metadata and FindCoordinator answers is held to what Kafka's Admin
// client said at the end of the same run (testbed/scenario cluster runs
// kwire.testbed.DescribeCluster; its lines are in captures/MANIFEST.md).
TEST(ClusterView, AThreeNodeCaptureHasTheRolesAdminReported) {
  Recording rec;
  std::string error;
  ASSERT_TRUE(load_recording(std::string(KWIRE_SOURCE_DIR) + "/captures/cluster.pcapng", ps(), {}, rec, error))
      << error;
  ClusterView view;
  FrameDecoder dec(ps());
  Frame req, resp;
  // In capture order: the last answer about a partition is the one that holds.
  std::vector<const Exchange*> order;
  for (const auto& s : rec.sessions)
    for (const auto& e : s.exchanges)
      if (!e.response.empty()) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Exchange* a, const Exchange* b) { return a->response_seq < b->response_seq; });
  for (const Exchange* e : order) {
    dec.decode_request(e->request, req);
    dec.decode_response(e->response, e->api_key, e->api_version, resp);
    view.learn(req, resp, ps());
  }
  const std::map<int32_t, std::string> brokers = {
      {1, "127.0.0.11:60287"}, {2, "127.0.0.12:60287"}, {3, "127.0.0.13:60287"}};
  EXPECT_EQ(view.brokers(), brokers);
  EXPECT_EQ(view.controller(), 2);
  struct Leader {
    const char* topic;
    int32_t partition, node;
  };
  for (Leader l : {Leader{"clicks", 0, 2}, {"clicks", 1, 3}, {"go-orders", 0, 2}, {"go-orders", 1, 3},
                   {"go-orders", 2, 1}, {"page-counts", 0, 1}, {"page-counts", 1, 2}, {"pages", 0, 1},
                   {"sarama-orders", 0, 3}, {"sarama-orders", 1, 1}, {"stateful-app-by-title-repartition", 0, 3},
                   {"stateful-app-by-title-repartition", 1, 1}, {"stateful-app-clicks-per-page-changelog", 0, 2},
                   {"stateful-app-clicks-per-page-changelog", 1, 3}})
    EXPECT_EQ(view.leader(l.topic, l.partition), l.node) << l.topic << "-" << l.partition;
  // Every node leads some partition, and the coordinators are spread too.
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "stateful-app"), 1);
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "go-classic"), 2);
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "go-848"), 2);
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "sarama-default"), 2);
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "sarama-max"), 1);
}

// FindCoordinator v4 (flexible): request KeyType, CoordinatorKeys; answer
// ThrottleTimeMs, Coordinators [Key, NodeId, Host, Port, ErrorCode, ErrorMessage].
struct Coordinator {
  const char* key;
  int node;
  const char* host;
  int port;
  int error;
};

void find_coordinator(ClusterView& view, int key_type, const std::vector<Coordinator>& answers) {
  wire::MessageBuilder rq;
  rq.i16(10).i16(4).i32(1).str("c").tags0().i8(key_type).carr(answers.size());
  for (const auto& a : answers) rq.cstr(a.key);
  rq.tags0();
  wire::MessageBuilder rs;
  rs.i32(1).tags0().i32(0).carr(answers.size());
  for (const auto& a : answers) rs.cstr(a.key).i32(a.node).cstr(a.host).i32(a.port).i16(a.error).cnull().tags0();
  rs.tags0();
  FrameDecoder dec(ps());
  Frame req, resp;
  // Frames point into the bytes they were decoded from: keep them.
  const auto request_bytes = rq.message(), response_bytes = rs.message();
  dec.decode_request(request_bytes, req);
  dec.decode_response(response_bytes, 10, 4, resp);
  ASSERT_TRUE(req.ok());
  ASSERT_TRUE(resp.ok());
  view.learn(req, resp, ps());
}

TEST(ClusterView, CoordinatorsAreLearnedPerKeyTypeAndForgottenOnNotCoordinator) {
  ClusterView view;
  find_coordinator(view, 0, {{"g1", 3, "127.0.0.13", 9092, 0}, {"g2", -1, "", -1, 15}});
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "g1"), 3);
  EXPECT_EQ(view.endpoint(3), "127.0.0.13:9092");
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "g2"), ClusterView::kUnknown);  // COORDINATOR_NOT_AVAILABLE
  EXPECT_EQ(view.coordinator(CoordinatorKey::Transaction, "g1"), ClusterView::kUnknown);
  find_coordinator(view, 1, {{"g1", 2, "127.0.0.12", 9092, 0}});
  EXPECT_EQ(view.coordinator(CoordinatorKey::Transaction, "g1"), 2);
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "g1"), 3);
  find_coordinator(view, 0, {{"g1", -1, "", -1, 16}});  // NOT_COORDINATOR
  EXPECT_EQ(view.coordinator(CoordinatorKey::Group, "g1"), ClusterView::kUnknown);
  EXPECT_EQ(view.coordinator(CoordinatorKey::Transaction, "g1"), 2);
}

// Metadata v12 answer (flexible) of three brokers in racks r1, r2, r1 (node 3),
// and topic orders: partition 0 led by 1 on replicas 1,2,3; partition 1 led by 2
// on replicas 2,3.
void metadata_with_racks(ClusterView& view) {
  wire::MessageBuilder rq;
  rq.i16(3).i16(12).i32(1).str("c").tags0().cnull().boolean(false).boolean(false).tags0();
  wire::MessageBuilder rs;
  rs.i32(1).tags0().i32(0).carr(3);
  rs.i32(1).cstr("127.0.0.11").i32(9092).cstr("r1").tags0();
  rs.i32(2).cstr("127.0.0.12").i32(9092).cstr("r2").tags0();
  rs.i32(3).cstr("127.0.0.13").i32(9092).cstr("r1").tags0();
  rs.cstr("cluster").i32(1).carr(1);
  rs.i16(0).cstr("orders").uuid(7).boolean(false).carr(2);
  rs.i16(0).i32(0).i32(1).i32(0).carr(3).i32(1).i32(2).i32(3).carr(3).i32(1).i32(2).i32(3).carr(0).tags0();
  rs.i16(0).i32(1).i32(2).i32(0).carr(2).i32(2).i32(3).carr(2).i32(2).i32(3).carr(0).tags0();
  rs.i32(-2147483648).tags0().tags0();
  FrameDecoder dec(ps());
  Frame req, resp;
  const auto request_bytes = rq.message(), response_bytes = rs.message();
  dec.decode_request(request_bytes, req);
  dec.decode_response(response_bytes, 3, 12, resp);
  ASSERT_TRUE(req.ok());
  ASSERT_TRUE(resp.ok()) << resp.errors.front().reason;
  view.learn(req, resp, ps());
}

// Fetch v12 of orders-`partition` by a client in `rack`, answered with
// `error` and `preferred` as PreferredReadReplica.
void fetch_answer(ClusterView& view, const char* rack, int partition, int error, int preferred) {
  wire::MessageBuilder rq;
  rq.i16(1).i16(12).i32(2).str("c").tags0().i32(-1).i32(500).i32(1).i32(52428800).i8(0).i32(0).i32(-1);
  rq.carr(1).cstr("orders").carr(1).i32(partition).i32(0).i64(0).i32(-1).i64(-1).i32(1048576).tags0().tags0();
  rq.carr(0).cstr(rack).tags0();
  wire::MessageBuilder rs;
  rs.i32(2).tags0().i32(0).i16(0).i32(0).carr(1).cstr("orders").carr(1);
  rs.i32(partition).i16(error).i64(10).i64(10).i64(0).cnull().i32(preferred).cnull().tags0().tags0().tags0();
  FrameDecoder dec(ps());
  Frame req, resp;
  const auto request_bytes = rq.message(), response_bytes = rs.message();
  dec.decode_request(request_bytes, req);
  dec.decode_response(response_bytes, 1, 12, resp);
  ASSERT_TRUE(req.ok()) << req.errors.front().reason;
  ASSERT_TRUE(resp.ok()) << resp.errors.front().reason;
  view.learn(req, resp, ps());
}

TEST(ClusterView, AClientInARackReadsFromItsRacksReplica) {
  ClusterView view;
  metadata_with_racks(view);
  EXPECT_EQ(view.rack(1), "r1");
  EXPECT_EQ(view.rack(2), "r2");
  EXPECT_EQ(view.rack(4), "");
  // The leader is in the client's rack: the leader.
  EXPECT_EQ(view.read_replica("orders", 0, "r1"), 1);
  // Another rack's leader: the replica in the client's.
  EXPECT_EQ(view.read_replica("orders", 0, "r2"), 2);
  EXPECT_EQ(view.read_replica("orders", 1, "r1"), 3);
  // No replica in that rack, or no rack: not known.
  EXPECT_EQ(view.read_replica("orders", 1, "r3"), ClusterView::kUnknown);
  EXPECT_EQ(view.read_replica("orders", 0, ""), ClusterView::kUnknown);
  // What the leader prefers wins over what kwire would pick ...
  fetch_answer(view, "r1", 0, 0, 3);
  EXPECT_EQ(view.read_replica("orders", 0, "r1"), 3);
  EXPECT_EQ(view.read_replica("orders", 0, "r2"), 2);  // for that rack only
  // ... an answer of the read replica itself (-1, no error) changes nothing ...
  fetch_answer(view, "r1", 0, 0, -1);
  EXPECT_EQ(view.read_replica("orders", 0, "r1"), 3);
  // ... and an error from it gives it up (OFFSET_OUT_OF_RANGE).
  fetch_answer(view, "r1", 0, 1, -1);
  EXPECT_EQ(view.read_replica("orders", 0, "r1"), 1);
}

}  // namespace
}  // namespace kwire::replay
