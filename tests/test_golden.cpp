// Golden frames: each test writes one Kafka message byte by byte from the
// Kafka 4.4.0 message specs (header, then the body field by field in spec
// order), decodes it, checks every field by its path, and encodes the decoded
// frame back to the very same bytes.
//
// Flexible versions use compact strings/arrays and end every struct with a
// tagged-field section; flexible requests carry request header v2 (whose
// client id stays a classic int16-length string) and flexible responses
// response header v1. Classic versions use request header v1 and response
// header v0.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/codes.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/records.hpp"
#include "tests/test_support.hpp"

using namespace kwire;
using kwire::test::Bytes;
using kwire::test::request_header_v2;

namespace {

constexpr int kDeleteGroups = 42;
constexpr int kDescribeTopicPartitions = 75;
constexpr int kStreamsGroupHeartbeat = 88;
constexpr int kStreamsGroupDescribe = 89;
constexpr int kStreamsGroupTopologyDescriptionUpdate = 93;

constexpr int32_t kNoAuthorizedOperations = INT32_MIN;  // the specs' default: not requested

using Names = std::vector<std::string>;
using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

// Request header v1 (classic): api key, version, correlation id, client id.
Bytes request_header_v1(int api, int version, int corr, const std::string& client) {
  Bytes b;
  b.i16(api).i16(version).i32(corr).str(client);
  return b;
}

// Response header v0 (classic): correlation id.
Bytes response_header_v0(int corr) {
  Bytes b;
  b.i32(corr);
  return b;
}

// Response header v1 (flexible): correlation id, tags.
Bytes response_header_v1(int corr) {
  Bytes b;
  b.i32(corr).tags0();
  return b;
}

// One golden message: its bytes, the decoded frame, and readers for fields by
// path ("Groups[0].Members[0].MemberEpoch"; "" is the body itself). A reader
// reports a missing field as a test failure naming the path.
class Golden {
 public:
  explicit Golden(const Bytes& b) : wire_(b.message()) {}
  Golden(const Golden&) = delete;
  Golden& operator=(const Golden&) = delete;

  const ProgramSet& ps = ProgramSet::release();
  Frame frame;

  ::testing::AssertionResult decode_request() {
    FrameDecoder(ps).decode_request(wire_, frame);
    return verdict();
  }
  ::testing::AssertionResult decode_response(int api_key, int version) {
    FrameDecoder(ps).decode_response(wire_, static_cast<int16_t>(api_key), static_cast<int16_t>(version), frame);
    return verdict();
  }

  void expect_request(std::string_view api_name, int api_key, int version, int32_t corr,
                      const std::string& client_id, int header_version) {
    expect_message(api_name, version, corr, header_version);
    EXPECT_EQ(frame.direction, Direction::Request);
    EXPECT_EQ(frame.api_key, api_key);
    EXPECT_EQ(header_fields(), (Names{"RequestApiKey", "RequestApiVersion", "CorrelationId", "ClientId"}));
    EXPECT_EQ(header_int("RequestApiKey"), api_key);
    EXPECT_EQ(header_int("RequestApiVersion"), version);
    EXPECT_EQ(header_int("CorrelationId"), corr);
    const Node* client = find_field(frame, ps, 0, "ClientId");
    ASSERT_NE(client, nullptr);
    ASSERT_FALSE(client->is_null());
    EXPECT_EQ(client->str(), client_id);
  }

  void expect_response(std::string_view api_name, int version, int32_t corr, int header_version) {
    expect_message(api_name, version, corr, header_version);
    EXPECT_EQ(frame.direction, Direction::Response);
    EXPECT_EQ(header_fields(), (Names{"CorrelationId"}));
    EXPECT_EQ(header_int("CorrelationId"), corr);
  }

  // Decode, then encode: the same bytes come back.
  void expect_reencodes_byte_identical() const {
    std::vector<uint8_t> out;
    std::string error;
    ASSERT_TRUE(FrameEncoder(ps).encode(frame, out, error)) << error;
    EXPECT_EQ(out, wire_);
  }

  const Node* node(const std::string& path) const {
    const Node* n = test::at(frame, ps, path);
    if (!n) ADD_FAILURE() << "no field at " << path;
    return n;
  }
  bool has(const std::string& path) const { return test::at(frame, ps, path) != nullptr; }

  // Names of the fields of the struct at `path`, in wire order.
  Names fields(const std::string& path) const {
    Names out;
    const Node* n = node(path);
    if (!n) return out;
    EXPECT_EQ(n->type, WireType::Struct) << path;
    for (uint32_t c : Children(frame, index(n))) out.emplace_back(ps.field(frame.nodes[c].desc).name);
    return out;
  }

  int64_t i(const std::string& path) const {
    const Node* n = node(path);
    if (!n) return INT64_MIN;
    EXPECT_FALSE(n->is_null()) << path;
    EXPECT_TRUE(is_integer(n->type)) << path << " is " << wire_type_name(n->type);
    return n->v.i;
  }
  bool b(const std::string& path) const {
    const Node* n = node(path);
    if (!n) return false;
    EXPECT_EQ(n->type, WireType::Bool) << path;
    return n->v.i != 0;
  }
  std::string s(const std::string& path) const {
    const Node* n = node(path);
    if (!n) return "<missing>";
    EXPECT_EQ(n->type, WireType::String) << path;
    if (n->is_null()) {
      ADD_FAILURE() << path << " is null";
      return "<null>";
    }
    return std::string(n->str());
  }
  std::vector<uint8_t> uuid(const std::string& path) const {
    const Node* n = node(path);
    if (!n) return {};
    EXPECT_EQ(n->type, WireType::Uuid) << path;
    auto bytes = n->bytes();
    return {bytes.begin(), bytes.end()};
  }
  WireType type(const std::string& path) const {
    const Node* n = node(path);
    return n ? n->type : WireType::Records;  // never a message field's type
  }
  bool null(const std::string& path) const {
    const Node* n = node(path);
    return n && n->is_null();
  }

  // Arrays: the element count the wire announced (aux), checked against the
  // elements decoded.
  int64_t count(const std::string& path) const {
    const Node* n = node(path);
    if (!n) return -2;
    EXPECT_EQ(n->type, WireType::Array) << path;
    EXPECT_FALSE(n->is_null()) << path;
    int64_t elements = 0;
    for (uint32_t c : Children(frame, index(n))) {
      (void)c;
      ++elements;
    }
    EXPECT_EQ(elements, n->aux) << path;
    return n->aux;
  }
  Ints ints(const std::string& path) const {
    Ints out;
    if (count(path) < 0) return out;
    const Node* n = node(path);
    for (uint32_t c : Children(frame, index(n))) out.push_back(frame.nodes[c].v.i);
    return out;
  }
  Strings strs(const std::string& path) const {
    Strings out;
    if (count(path) < 0) return out;
    const Node* n = node(path);
    for (uint32_t c : Children(frame, index(n))) out.emplace_back(frame.nodes[c].str());
    return out;
  }

  // The documented name of the value at `path` (error codes, status codes,
  // node types, topology description status).
  std::string code(const std::string& path) const {
    const Node* n = node(path);
    if (!n || !frame.program) return "<missing>";
    return std::string(code_name(frame.program->api_name, ps.field(n->desc), n->v.i));
  }

 private:
  ::testing::AssertionResult verdict() const {
    if (frame.ok()) return ::testing::AssertionSuccess();
    auto r = ::testing::AssertionFailure();
    for (const auto& e : frame.errors) r << "at " << e.offset << ": " << e.reason << "; ";
    return r;
  }

  void expect_message(std::string_view api_name, int version, int32_t corr, int header_version) {
    ASSERT_NE(frame.program, nullptr);
    EXPECT_EQ(frame.program->api_name, api_name);
    EXPECT_EQ(frame.program->version, version);
    EXPECT_EQ(frame.program->origin, frame.program->older ? "kafka 3.9.1" : "kafka 4.4.0");
    EXPECT_EQ(frame.api_version, version);
    EXPECT_EQ(frame.correlation_id, corr);
    EXPECT_EQ(frame.header_version, header_version);
  }

  Names header_fields() const {
    Names out;
    for (uint32_t c : Children(frame, 0)) out.emplace_back(ps.field(frame.nodes[c].desc).name);
    return out;
  }
  int64_t header_int(std::string_view name) const {
    const Node* n = find_field(frame, ps, 0, name);
    if (!n) {
      ADD_FAILURE() << "no header field " << name;
      return INT64_MIN;
    }
    return n->v.i;
  }

  uint32_t index(const Node* n) const { return static_cast<uint32_t>(n - frame.nodes.data()); }

  std::vector<uint8_t> wire_;
};

// ---------------------------------------------------------------------------
// The KIP-1331 appendix application: orders -> filter -> valid-orders, one
// subtopology "0" of three nodes.

constexpr const char* kSourceNode = "KSTREAM-SOURCE-0000000000";
constexpr const char* kFilterNode = "KSTREAM-FILTER-0000000001";
constexpr const char* kSinkNode = "KSTREAM-SINK-0000000002";

// TopologyDescription.Subtopologies of the appendix application (the array
// only; the caller writes GlobalStores and the struct's tags).
void appendix_description_subtopologies(Bytes& b) {
  b.carr(1)                       // Subtopologies
      .cstr("0")                  //  [0] SubtopologyId
      .carr(3)                    //      Nodes
      .cstr(kSourceNode)          //       [0] Name
      .i8(1)                      //           NodeType (source)
      .carr(1).cstr("orders")     //           SourceTopics
      .cnull()                    //           SinkTopic
      .carr(0)                    //           Stores
      .carr(1).cstr(kFilterNode)  //           Successors
      .tags0()
      .cstr(kFilterNode)          //       [1] Name
      .i8(2)                      //           NodeType (processor)
      .carr(0)                    //           SourceTopics
      .cnull()                    //           SinkTopic
      .carr(0)                    //           Stores
      .carr(1).cstr(kSinkNode)    //           Successors
      .tags0()
      .cstr(kSinkNode)            //       [2] Name
      .i8(3)                      //           NodeType (sink)
      .carr(0)                    //           SourceTopics
      .cstr("valid-orders")       //           SinkTopic
      .carr(0)                    //           Stores
      .carr(0)                    //           Successors
      .tags0()
      .tags0();                   //      (end of subtopology)
}

// Checks what appendix_description_subtopologies wrote, under `at` (the
// TopologyDescription struct).
void expect_appendix_description_subtopologies(const Golden& g, const std::string& at) {
  const std::string st = at + ".Subtopologies[0]";
  EXPECT_EQ(g.count(at + ".Subtopologies"), 1);
  EXPECT_EQ(g.fields(st), (Names{"SubtopologyId", "Nodes"}));
  EXPECT_EQ(g.s(st + ".SubtopologyId"), "0");
  EXPECT_EQ(g.count(st + ".Nodes"), 3);

  const Names node_fields{"Name", "NodeType", "SourceTopics", "SinkTopic", "Stores", "Successors"};
  const std::string source = st + ".Nodes[0]";
  EXPECT_EQ(g.fields(source), node_fields);
  EXPECT_EQ(g.s(source + ".Name"), kSourceNode);
  EXPECT_EQ(g.i(source + ".NodeType"), 1);
  EXPECT_EQ(g.code(source + ".NodeType"), "SOURCE");
  EXPECT_EQ(g.strs(source + ".SourceTopics"), (Strings{"orders"}));
  EXPECT_EQ(g.s(source + ".SourceTopics[0]"), "orders");
  EXPECT_TRUE(g.null(source + ".SinkTopic"));
  EXPECT_EQ(g.count(source + ".Stores"), 0);
  EXPECT_EQ(g.strs(source + ".Successors"), (Strings{kFilterNode}));

  const std::string filter = st + ".Nodes[1]";
  EXPECT_EQ(g.fields(filter), node_fields);
  EXPECT_EQ(g.s(filter + ".Name"), kFilterNode);
  EXPECT_EQ(g.i(filter + ".NodeType"), 2);
  EXPECT_EQ(g.code(filter + ".NodeType"), "PROCESSOR");
  EXPECT_EQ(g.count(filter + ".SourceTopics"), 0);
  EXPECT_TRUE(g.null(filter + ".SinkTopic"));
  EXPECT_EQ(g.count(filter + ".Stores"), 0);
  EXPECT_EQ(g.strs(filter + ".Successors"), (Strings{kSinkNode}));

  const std::string sink = st + ".Nodes[2]";
  EXPECT_EQ(g.fields(sink), node_fields);
  EXPECT_EQ(g.s(sink + ".Name"), kSinkNode);
  EXPECT_EQ(g.i(sink + ".NodeType"), 3);
  EXPECT_EQ(g.code(sink + ".NodeType"), "SINK");
  EXPECT_EQ(g.count(sink + ".SourceTopics"), 0);
  EXPECT_EQ(g.s(sink + ".SinkTopic"), "valid-orders");
  EXPECT_EQ(g.count(sink + ".Stores"), 0);
  EXPECT_EQ(g.count(sink + ".Successors"), 0);
}

// Identities shared by the streams examples.
const std::string kOrdersApp = "orders-app";
const std::string kMemberId = "xXyc3pZeS0SzV1uRk4pGJQ";
const std::string kProcessId = "7f3c2d1e-5b4a-4c3d-9e8f-0a1b2c3d4e5f";
const std::string kStreamsClientId = "orders-app-7f3c2d1e-5b4a-4c3d-9e8f-0a1b2c3d4e5f-StreamThread-1-consumer";

}  // namespace

// ===========================================================================
// StreamsGroupHeartbeat (api key 88)

TEST(Golden, StreamsGroupHeartbeatRequestV0JoiningMemberSendsTheAppendixTopology) {
  Bytes b = request_header_v2(kStreamsGroupHeartbeat, 0, 11, kStreamsClientId);
  b.cstr(kOrdersApp)                        // GroupId
      .cstr(kMemberId)                      // MemberId
      .i32(0)                               // MemberEpoch: 0 joins
      .i32(0)                               // EndpointInformationEpoch
      .cnull()                              // InstanceId
      .cstr("eu-west-1a")                   // RackId
      .i32(300000)                          // RebalanceTimeoutMs
      .i8(1)                                // Topology: present
      .i32(0)                               //  Epoch
      .carr(1)                              //  Subtopologies
      .cstr("0")                            //   [0] SubtopologyId
      .carr(1).cstr("orders")               //       SourceTopics
      .carr(0)                              //       SourceTopicRegex
      .carr(0)                              //       StateChangelogTopics
      .carr(0)                              //       RepartitionSinkTopics
      .carr(0)                              //       RepartitionSourceTopics
      .carr(0)                              //       CopartitionGroups
      .tags0()
      .tags0()                              //  (end of Topology)
      .carr(0)                              // ActiveTasks: none owned yet
      .carr(0)                              // StandbyTasks
      .carr(0)                              // WarmupTasks
      .cstr(kProcessId)                     // ProcessId
      .i8(1)                                // UserEndpoint: present
      .cstr("orders-app-0.orders-app.svc")  //  Host
      .i16(8080)                            //  Port
      .tags0()
      .carr(1)                              // ClientTags
      .cstr("az").cstr("eu-west-1a").tags0()
      .carr(0)                              // TaskOffsets
      .carr(0)                              // TaskEndOffsets
      .i8(0)                                // ShutdownApplication
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupHeartbeat", kStreamsGroupHeartbeat, 0, 11, kStreamsClientId, 2);
  EXPECT_EQ(g.fields(""), (Names{"GroupId", "MemberId", "MemberEpoch", "EndpointInformationEpoch", "InstanceId",
                                 "RackId", "RebalanceTimeoutMs", "Topology", "ActiveTasks", "StandbyTasks",
                                 "WarmupTasks", "ProcessId", "UserEndpoint", "ClientTags", "TaskOffsets",
                                 "TaskEndOffsets", "ShutdownApplication"}));
  EXPECT_EQ(g.s("GroupId"), kOrdersApp);
  EXPECT_EQ(g.s("MemberId"), kMemberId);
  EXPECT_EQ(g.i("MemberEpoch"), 0);
  EXPECT_EQ(g.i("EndpointInformationEpoch"), 0);
  EXPECT_TRUE(g.null("InstanceId"));
  EXPECT_EQ(g.s("RackId"), "eu-west-1a");
  EXPECT_EQ(g.i("RebalanceTimeoutMs"), 300000);

  EXPECT_FALSE(g.null("Topology"));
  EXPECT_EQ(g.fields("Topology"), (Names{"Epoch", "Subtopologies"}));
  EXPECT_EQ(g.i("Topology.Epoch"), 0);
  EXPECT_EQ(g.count("Topology.Subtopologies"), 1);
  EXPECT_EQ(g.fields("Topology.Subtopologies[0]"),
            (Names{"SubtopologyId", "SourceTopics", "SourceTopicRegex", "StateChangelogTopics",
                   "RepartitionSinkTopics", "RepartitionSourceTopics", "CopartitionGroups"}));
  EXPECT_EQ(g.s("Topology.Subtopologies[0].SubtopologyId"), "0");
  EXPECT_EQ(g.strs("Topology.Subtopologies[0].SourceTopics"), (Strings{"orders"}));
  EXPECT_EQ(g.count("Topology.Subtopologies[0].SourceTopicRegex"), 0);
  EXPECT_EQ(g.count("Topology.Subtopologies[0].StateChangelogTopics"), 0);
  EXPECT_EQ(g.count("Topology.Subtopologies[0].RepartitionSinkTopics"), 0);
  EXPECT_EQ(g.count("Topology.Subtopologies[0].RepartitionSourceTopics"), 0);
  EXPECT_EQ(g.count("Topology.Subtopologies[0].CopartitionGroups"), 0);

  EXPECT_EQ(g.count("ActiveTasks"), 0);
  EXPECT_EQ(g.count("StandbyTasks"), 0);
  EXPECT_EQ(g.count("WarmupTasks"), 0);
  EXPECT_EQ(g.s("ProcessId"), kProcessId);
  EXPECT_EQ(g.fields("UserEndpoint"), (Names{"Host", "Port"}));
  EXPECT_EQ(g.s("UserEndpoint.Host"), "orders-app-0.orders-app.svc");
  EXPECT_EQ(g.i("UserEndpoint.Port"), 8080);
  EXPECT_EQ(g.count("ClientTags"), 1);
  EXPECT_EQ(g.fields("ClientTags[0]"), (Names{"Key", "Value"}));
  EXPECT_EQ(g.s("ClientTags[0].Key"), "az");
  EXPECT_EQ(g.s("ClientTags[0].Value"), "eu-west-1a");
  EXPECT_EQ(g.count("TaskOffsets"), 0);
  EXPECT_EQ(g.count("TaskEndOffsets"), 0);
  EXPECT_FALSE(g.b("ShutdownApplication"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupHeartbeatRequestV0SteadyStateHeartbeatIsMostlyNulls) {
  Bytes b = request_header_v2(kStreamsGroupHeartbeat, 0, 12, kStreamsClientId);
  b.cstr(kOrdersApp)  // GroupId
      .cstr(kMemberId)  // MemberId
      .i32(4)           // MemberEpoch
      .i32(2)           // EndpointInformationEpoch
      .cnull()          // InstanceId
      .cnull()          // RackId
      .i32(-1)          // RebalanceTimeoutMs: unchanged
      .i8(-1)           // Topology: null
      .cnull()          // ActiveTasks
      .cnull()          // StandbyTasks
      .cnull()          // WarmupTasks
      .cnull()          // ProcessId
      .i8(-1)           // UserEndpoint: null
      .cnull()          // ClientTags
      .cnull()          // TaskOffsets
      .cnull()          // TaskEndOffsets
      .i8(0)            // ShutdownApplication
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupHeartbeat", kStreamsGroupHeartbeat, 0, 12, kStreamsClientId, 2);
  EXPECT_EQ(g.fields(""), (Names{"GroupId", "MemberId", "MemberEpoch", "EndpointInformationEpoch", "InstanceId",
                                 "RackId", "RebalanceTimeoutMs", "Topology", "ActiveTasks", "StandbyTasks",
                                 "WarmupTasks", "ProcessId", "UserEndpoint", "ClientTags", "TaskOffsets",
                                 "TaskEndOffsets", "ShutdownApplication"}));
  EXPECT_EQ(g.s("GroupId"), kOrdersApp);
  EXPECT_EQ(g.s("MemberId"), kMemberId);
  EXPECT_EQ(g.i("MemberEpoch"), 4);
  EXPECT_EQ(g.i("EndpointInformationEpoch"), 2);
  EXPECT_TRUE(g.null("InstanceId"));
  EXPECT_TRUE(g.null("RackId"));
  EXPECT_EQ(g.i("RebalanceTimeoutMs"), -1);
  EXPECT_TRUE(g.null("Topology"));
  EXPECT_EQ(g.fields("Topology"), Names{});
  EXPECT_TRUE(g.null("ActiveTasks"));
  EXPECT_TRUE(g.null("StandbyTasks"));
  EXPECT_TRUE(g.null("WarmupTasks"));
  EXPECT_TRUE(g.null("ProcessId"));
  EXPECT_TRUE(g.null("UserEndpoint"));
  EXPECT_TRUE(g.null("ClientTags"));
  EXPECT_TRUE(g.null("TaskOffsets"));
  EXPECT_TRUE(g.null("TaskEndOffsets"));
  EXPECT_FALSE(g.b("ShutdownApplication"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupHeartbeatRequestV1JoiningMemberWithRepartitionAndChangelogTopics) {
  // A stateful application: subtopology 0 re-keys orders into a repartition
  // topic, subtopology 1 aggregates it (co-partitioned with customers) into a
  // store with a changelog, subtopology 2 reads topics by pattern.
  const std::string repartition = "order-totals-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition";
  const std::string changelog = "order-totals-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog";
  const std::string client = "order-totals-1b2c3d4e-0000-4000-8000-00000000abcd-StreamThread-2-consumer";
  Bytes b = request_header_v2(kStreamsGroupHeartbeat, 1, 21, client);
  b.cstr("order-totals")                 // GroupId
      .cstr("Zm9vYmFyYmF6cXV1eDEyMw")    // MemberId
      .i32(0)                            // MemberEpoch
      .i32(0)                            // EndpointInformationEpoch
      .cstr("order-totals-0")            // InstanceId (static member)
      .cnull()                           // RackId
      .i32(300000)                       // RebalanceTimeoutMs
      .i8(1)                             // Topology: present
      .i32(1)                            //  Epoch
      .carr(3)                           //  Subtopologies
      .cstr("0")                         //   [0] SubtopologyId
      .carr(1).cstr("orders")            //       SourceTopics
      .carr(0)                           //       SourceTopicRegex
      .carr(0)                           //       StateChangelogTopics
      .carr(1).cstr(repartition)         //       RepartitionSinkTopics
      .carr(0)                           //       RepartitionSourceTopics
      .carr(0)                           //       CopartitionGroups
      .tags0()
      .cstr("1")                         //   [1] SubtopologyId
      .carr(1).cstr("customers")         //       SourceTopics
      .carr(0)                           //       SourceTopicRegex
      .carr(1)                           //       StateChangelogTopics
      .cstr(changelog)                   //        [0] Name
      .i32(0)                            //            Partitions
      .i16(0)                            //            ReplicationFactor
      .carr(1)                           //            TopicConfigs
      .cstr("cleanup.policy").cstr("compact").tags0()
      .tags0()
      .carr(0)                           //       RepartitionSinkTopics
      .carr(1)                           //       RepartitionSourceTopics
      .cstr(repartition)                 //        [0] Name
      .i32(6)                            //            Partitions
      .i16(3)                            //            ReplicationFactor
      .carr(2)                           //            TopicConfigs
      .cstr("cleanup.policy").cstr("delete").tags0()
      .cstr("retention.ms").cstr("-1").tags0()
      .tags0()
      .carr(1)                           //       CopartitionGroups
      .carr(1).i16(0)                    //        [0] SourceTopics (indexes)
      .carr(0)                           //            SourceTopicRegex
      .carr(1).i16(0)                    //            RepartitionSourceTopics
      .tags0()
      .tags0()
      .cstr("2")                         //   [2] SubtopologyId
      .carr(0)                           //       SourceTopics
      .carr(1).cstr("audit-.*")          //       SourceTopicRegex
      .carr(0)                           //       StateChangelogTopics
      .carr(0)                           //       RepartitionSinkTopics
      .carr(0)                           //       RepartitionSourceTopics
      .carr(0)                           //       CopartitionGroups
      .tags0()
      .tags0()                           //  (end of Topology)
      .carr(0)                           // ActiveTasks
      .carr(0)                           // StandbyTasks
      .carr(0)                           // WarmupTasks
      .cstr("1b2c3d4e-0000-4000-8000-00000000abcd")  // ProcessId
      .i8(-1)                            // UserEndpoint: null
      .carr(0)                           // ClientTags
      .cnull()                           // TaskOffsets
      .cnull()                           // TaskEndOffsets
      .i8(0)                             // ShutdownApplication
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupHeartbeat", kStreamsGroupHeartbeat, 1, 21, client, 2);
  EXPECT_EQ(g.fields(""), (Names{"GroupId", "MemberId", "MemberEpoch", "EndpointInformationEpoch", "InstanceId",
                                 "RackId", "RebalanceTimeoutMs", "Topology", "ActiveTasks", "StandbyTasks",
                                 "WarmupTasks", "ProcessId", "UserEndpoint", "ClientTags", "TaskOffsets",
                                 "TaskEndOffsets", "ShutdownApplication"}));
  EXPECT_EQ(g.s("GroupId"), "order-totals");
  EXPECT_EQ(g.s("MemberId"), "Zm9vYmFyYmF6cXV1eDEyMw");
  EXPECT_EQ(g.i("MemberEpoch"), 0);
  EXPECT_EQ(g.i("EndpointInformationEpoch"), 0);
  EXPECT_EQ(g.s("InstanceId"), "order-totals-0");
  EXPECT_TRUE(g.null("RackId"));
  EXPECT_EQ(g.i("RebalanceTimeoutMs"), 300000);
  EXPECT_EQ(g.i("Topology.Epoch"), 1);
  EXPECT_EQ(g.count("Topology.Subtopologies"), 3);

  const std::string s0 = "Topology.Subtopologies[0]";
  EXPECT_EQ(g.s(s0 + ".SubtopologyId"), "0");
  EXPECT_EQ(g.strs(s0 + ".SourceTopics"), (Strings{"orders"}));
  EXPECT_EQ(g.count(s0 + ".SourceTopicRegex"), 0);
  EXPECT_EQ(g.count(s0 + ".StateChangelogTopics"), 0);
  EXPECT_EQ(g.strs(s0 + ".RepartitionSinkTopics"), (Strings{repartition}));
  EXPECT_EQ(g.count(s0 + ".RepartitionSourceTopics"), 0);
  EXPECT_EQ(g.count(s0 + ".CopartitionGroups"), 0);

  const std::string s1 = "Topology.Subtopologies[1]";
  EXPECT_EQ(g.s(s1 + ".SubtopologyId"), "1");
  EXPECT_EQ(g.strs(s1 + ".SourceTopics"), (Strings{"customers"}));
  EXPECT_EQ(g.count(s1 + ".SourceTopicRegex"), 0);
  EXPECT_EQ(g.count(s1 + ".StateChangelogTopics"), 1);
  EXPECT_EQ(g.fields(s1 + ".StateChangelogTopics[0]"), (Names{"Name", "Partitions", "ReplicationFactor", "TopicConfigs"}));
  EXPECT_EQ(g.s(s1 + ".StateChangelogTopics[0].Name"), changelog);
  EXPECT_EQ(g.i(s1 + ".StateChangelogTopics[0].Partitions"), 0);
  EXPECT_EQ(g.i(s1 + ".StateChangelogTopics[0].ReplicationFactor"), 0);
  EXPECT_EQ(g.count(s1 + ".StateChangelogTopics[0].TopicConfigs"), 1);
  EXPECT_EQ(g.s(s1 + ".StateChangelogTopics[0].TopicConfigs[0].Key"), "cleanup.policy");
  EXPECT_EQ(g.s(s1 + ".StateChangelogTopics[0].TopicConfigs[0].Value"), "compact");
  EXPECT_EQ(g.count(s1 + ".RepartitionSinkTopics"), 0);
  EXPECT_EQ(g.count(s1 + ".RepartitionSourceTopics"), 1);
  EXPECT_EQ(g.s(s1 + ".RepartitionSourceTopics[0].Name"), repartition);
  EXPECT_EQ(g.i(s1 + ".RepartitionSourceTopics[0].Partitions"), 6);
  EXPECT_EQ(g.i(s1 + ".RepartitionSourceTopics[0].ReplicationFactor"), 3);
  EXPECT_EQ(g.count(s1 + ".RepartitionSourceTopics[0].TopicConfigs"), 2);
  EXPECT_EQ(g.s(s1 + ".RepartitionSourceTopics[0].TopicConfigs[0].Key"), "cleanup.policy");
  EXPECT_EQ(g.s(s1 + ".RepartitionSourceTopics[0].TopicConfigs[0].Value"), "delete");
  EXPECT_EQ(g.s(s1 + ".RepartitionSourceTopics[0].TopicConfigs[1].Key"), "retention.ms");
  EXPECT_EQ(g.s(s1 + ".RepartitionSourceTopics[0].TopicConfigs[1].Value"), "-1");
  EXPECT_EQ(g.count(s1 + ".CopartitionGroups"), 1);
  EXPECT_EQ(g.fields(s1 + ".CopartitionGroups[0]"), (Names{"SourceTopics", "SourceTopicRegex", "RepartitionSourceTopics"}));
  EXPECT_EQ(g.ints(s1 + ".CopartitionGroups[0].SourceTopics"), (Ints{0}));
  EXPECT_EQ(g.count(s1 + ".CopartitionGroups[0].SourceTopicRegex"), 0);
  EXPECT_EQ(g.ints(s1 + ".CopartitionGroups[0].RepartitionSourceTopics"), (Ints{0}));

  const std::string s2 = "Topology.Subtopologies[2]";
  EXPECT_EQ(g.s(s2 + ".SubtopologyId"), "2");
  EXPECT_EQ(g.count(s2 + ".SourceTopics"), 0);
  EXPECT_EQ(g.strs(s2 + ".SourceTopicRegex"), (Strings{"audit-.*"}));
  EXPECT_EQ(g.count(s2 + ".StateChangelogTopics"), 0);
  EXPECT_EQ(g.count(s2 + ".RepartitionSinkTopics"), 0);
  EXPECT_EQ(g.count(s2 + ".RepartitionSourceTopics"), 0);
  EXPECT_EQ(g.count(s2 + ".CopartitionGroups"), 0);

  EXPECT_EQ(g.count("ActiveTasks"), 0);
  EXPECT_EQ(g.count("StandbyTasks"), 0);
  EXPECT_EQ(g.count("WarmupTasks"), 0);
  EXPECT_EQ(g.s("ProcessId"), "1b2c3d4e-0000-4000-8000-00000000abcd");
  EXPECT_TRUE(g.null("UserEndpoint"));
  EXPECT_EQ(g.count("ClientTags"), 0);
  EXPECT_TRUE(g.null("TaskOffsets"));
  EXPECT_TRUE(g.null("TaskEndOffsets"));
  EXPECT_FALSE(g.b("ShutdownApplication"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupHeartbeatRequestV1ReportsOwnedTasksAndOffsetsAndAsksForShutdown) {
  const std::string client = "order-totals-1b2c3d4e-0000-4000-8000-00000000abcd-StreamThread-2-consumer";
  Bytes b = request_header_v2(kStreamsGroupHeartbeat, 1, 22, client);
  b.cstr("order-totals")               // GroupId
      .cstr("Zm9vYmFyYmF6cXV1eDEyMw")  // MemberId
      .i32(7)                          // MemberEpoch
      .i32(3)                          // EndpointInformationEpoch
      .cnull()                         // InstanceId
      .cnull()                         // RackId
      .i32(-1)                         // RebalanceTimeoutMs
      .i8(-1)                          // Topology: null
      .carr(2)                         // ActiveTasks
      .cstr("0").carr(3).i32(0).i32(1).i32(2).tags0()
      .cstr("1").carr(1).i32(0).tags0()
      .carr(1)                         // StandbyTasks
      .cstr("1").carr(1).i32(1).tags0()
      .carr(0)                         // WarmupTasks
      .cnull()                         // ProcessId
      .i8(-1)                          // UserEndpoint: null
      .cnull()                         // ClientTags
      .carr(1)                         // TaskOffsets
      .cstr("1").i32(1).i64(1500).tags0()
      .carr(1)                         // TaskEndOffsets
      .cstr("1").i32(1).i64(1520).tags0()
      .i8(1)                           // ShutdownApplication
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupHeartbeat", kStreamsGroupHeartbeat, 1, 22, client, 2);
  EXPECT_EQ(g.fields("").size(), 17u);
  EXPECT_EQ(g.s("GroupId"), "order-totals");
  EXPECT_EQ(g.s("MemberId"), "Zm9vYmFyYmF6cXV1eDEyMw");
  EXPECT_EQ(g.i("MemberEpoch"), 7);
  EXPECT_EQ(g.i("EndpointInformationEpoch"), 3);
  EXPECT_TRUE(g.null("InstanceId"));
  EXPECT_TRUE(g.null("RackId"));
  EXPECT_EQ(g.i("RebalanceTimeoutMs"), -1);
  EXPECT_TRUE(g.null("Topology"));
  EXPECT_EQ(g.count("ActiveTasks"), 2);
  EXPECT_EQ(g.fields("ActiveTasks[0]"), (Names{"SubtopologyId", "Partitions"}));
  EXPECT_EQ(g.s("ActiveTasks[0].SubtopologyId"), "0");
  EXPECT_EQ(g.ints("ActiveTasks[0].Partitions"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.s("ActiveTasks[1].SubtopologyId"), "1");
  EXPECT_EQ(g.ints("ActiveTasks[1].Partitions"), (Ints{0}));
  EXPECT_EQ(g.count("StandbyTasks"), 1);
  EXPECT_EQ(g.s("StandbyTasks[0].SubtopologyId"), "1");
  EXPECT_EQ(g.ints("StandbyTasks[0].Partitions"), (Ints{1}));
  EXPECT_EQ(g.count("WarmupTasks"), 0);
  EXPECT_TRUE(g.null("ProcessId"));
  EXPECT_TRUE(g.null("UserEndpoint"));
  EXPECT_TRUE(g.null("ClientTags"));
  EXPECT_EQ(g.count("TaskOffsets"), 1);
  EXPECT_EQ(g.fields("TaskOffsets[0]"), (Names{"SubtopologyId", "Partition", "Offset"}));
  EXPECT_EQ(g.s("TaskOffsets[0].SubtopologyId"), "1");
  EXPECT_EQ(g.i("TaskOffsets[0].Partition"), 1);
  EXPECT_EQ(g.i("TaskOffsets[0].Offset"), 1500);
  EXPECT_EQ(g.count("TaskEndOffsets"), 1);
  EXPECT_EQ(g.s("TaskEndOffsets[0].SubtopologyId"), "1");
  EXPECT_EQ(g.i("TaskEndOffsets[0].Partition"), 1);
  EXPECT_EQ(g.i("TaskEndOffsets[0].Offset"), 1520);
  EXPECT_TRUE(g.b("ShutdownApplication"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupHeartbeatResponseV0AssignsTasksWithInt32RecoveryLag) {
  Bytes b = response_header_v1(11);
  b.i32(0)                                // ThrottleTimeMs
      .i16(0)                             // ErrorCode
      .cnull()                            // ErrorMessage
      .cstr(kMemberId)                    // MemberId
      .i32(1)                             // MemberEpoch
      .i32(5000)                          // HeartbeatIntervalMs
      .i32(10000)                         // AcceptableRecoveryLagLegacy (int32, v0 only)
      .i32(60000)                         // TaskOffsetIntervalMs
      .carr(0)                            // Status: none active
      .carr(1)                            // ActiveTasks
      .cstr("0").carr(3).i32(0).i32(1).i32(2).tags0()
      .carr(0)                            // StandbyTasks
      .carr(0)                            // WarmupTasks
      .i32(1)                             // EndpointInformationEpoch
      .carr(1)                            // PartitionsByUserEndpoint
      .cstr("orders-app-0.orders-app.svc")  //  [0] UserEndpoint.Host
      .i16(8080)                          //      UserEndpoint.Port
      .tags0()
      .carr(1)                            //      ActivePartitions
      .cstr("orders").carr(3).i32(0).i32(1).i32(2).tags0()
      .carr(0)                            //      StandbyPartitions
      .tags0()
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kStreamsGroupHeartbeat, 0));
  g.expect_response("StreamsGroupHeartbeat", 0, 11, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "ErrorCode", "ErrorMessage", "MemberId", "MemberEpoch",
                                 "HeartbeatIntervalMs", "AcceptableRecoveryLagLegacy", "TaskOffsetIntervalMs",
                                 "Status", "ActiveTasks", "StandbyTasks", "WarmupTasks", "EndpointInformationEpoch",
                                 "PartitionsByUserEndpoint"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.i("ErrorCode"), 0);
  EXPECT_EQ(g.code("ErrorCode"), "NONE");
  EXPECT_TRUE(g.null("ErrorMessage"));
  EXPECT_EQ(g.s("MemberId"), kMemberId);
  EXPECT_EQ(g.i("MemberEpoch"), 1);
  EXPECT_EQ(g.i("HeartbeatIntervalMs"), 5000);
  EXPECT_EQ(g.i("AcceptableRecoveryLagLegacy"), 10000);
  EXPECT_EQ(g.type("AcceptableRecoveryLagLegacy"), WireType::Int32);
  EXPECT_FALSE(g.has("AcceptableRecoveryLag"));
  EXPECT_FALSE(g.has("TopologyDescriptionRequired"));
  EXPECT_EQ(g.i("TaskOffsetIntervalMs"), 60000);
  EXPECT_EQ(g.count("Status"), 0);
  EXPECT_EQ(g.count("ActiveTasks"), 1);
  EXPECT_EQ(g.s("ActiveTasks[0].SubtopologyId"), "0");
  EXPECT_EQ(g.ints("ActiveTasks[0].Partitions"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.count("StandbyTasks"), 0);
  EXPECT_EQ(g.count("WarmupTasks"), 0);
  EXPECT_EQ(g.i("EndpointInformationEpoch"), 1);
  EXPECT_EQ(g.count("PartitionsByUserEndpoint"), 1);
  EXPECT_EQ(g.fields("PartitionsByUserEndpoint[0]"), (Names{"UserEndpoint", "ActivePartitions", "StandbyPartitions"}));
  EXPECT_EQ(g.s("PartitionsByUserEndpoint[0].UserEndpoint.Host"), "orders-app-0.orders-app.svc");
  EXPECT_EQ(g.i("PartitionsByUserEndpoint[0].UserEndpoint.Port"), 8080);
  EXPECT_EQ(g.count("PartitionsByUserEndpoint[0].ActivePartitions"), 1);
  EXPECT_EQ(g.fields("PartitionsByUserEndpoint[0].ActivePartitions[0]"), (Names{"Topic", "Partitions"}));
  EXPECT_EQ(g.s("PartitionsByUserEndpoint[0].ActivePartitions[0].Topic"), "orders");
  EXPECT_EQ(g.ints("PartitionsByUserEndpoint[0].ActivePartitions[0].Partitions"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.count("PartitionsByUserEndpoint[0].StandbyPartitions"), 0);
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupHeartbeatResponseV1StaleTopologyWithInt64RecoveryLag) {
  const std::string detail = "member topology epoch 0 is older than the group topology epoch 1";
  Bytes b = response_header_v1(12);
  b.i32(0)                       // ThrottleTimeMs
      .i16(0)                    // ErrorCode
      .cnull()                   // ErrorMessage
      .cstr(kMemberId)           // MemberId
      .i32(2)                    // MemberEpoch
      .i32(5000)                 // HeartbeatIntervalMs
      .i32(60000)                // TaskOffsetIntervalMs
      .i64(10000000000)          // AcceptableRecoveryLag (int64 from v1; beyond int32)
      .carr(1)                   // Status
      .i8(0).cstr(detail).tags0()  //  [0] StatusCode 0, StatusDetail
      .cnull()                   // ActiveTasks: unchanged
      .cnull()                   // StandbyTasks
      .cnull()                   // WarmupTasks
      .i8(1)                     // TopologyDescriptionRequired
      .i32(1)                    // EndpointInformationEpoch
      .cnull()                   // PartitionsByUserEndpoint
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kStreamsGroupHeartbeat, 1));
  g.expect_response("StreamsGroupHeartbeat", 1, 12, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "ErrorCode", "ErrorMessage", "MemberId", "MemberEpoch",
                                 "HeartbeatIntervalMs", "TaskOffsetIntervalMs", "AcceptableRecoveryLag", "Status",
                                 "ActiveTasks", "StandbyTasks", "WarmupTasks", "TopologyDescriptionRequired",
                                 "EndpointInformationEpoch", "PartitionsByUserEndpoint"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.i("ErrorCode"), 0);
  EXPECT_TRUE(g.null("ErrorMessage"));
  EXPECT_EQ(g.s("MemberId"), kMemberId);
  EXPECT_EQ(g.i("MemberEpoch"), 2);
  EXPECT_EQ(g.i("HeartbeatIntervalMs"), 5000);
  EXPECT_EQ(g.i("TaskOffsetIntervalMs"), 60000);
  EXPECT_FALSE(g.has("AcceptableRecoveryLagLegacy"));
  EXPECT_EQ(g.i("AcceptableRecoveryLag"), 10000000000);
  EXPECT_EQ(g.type("AcceptableRecoveryLag"), WireType::Int64);
  EXPECT_EQ(g.count("Status"), 1);
  EXPECT_EQ(g.fields("Status[0]"), (Names{"StatusCode", "StatusDetail"}));
  EXPECT_EQ(g.i("Status[0].StatusCode"), 0);
  const Node* status = g.node("Status[0].StatusCode");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(code_name("StreamsGroupHeartbeat", g.ps.field(status->desc), 0), std::string_view("STALE_TOPOLOGY"));
  EXPECT_EQ(g.code("Status[0].StatusCode"), "STALE_TOPOLOGY");
  EXPECT_EQ(g.s("Status[0].StatusDetail"), detail);
  EXPECT_TRUE(g.null("ActiveTasks"));
  EXPECT_TRUE(g.null("StandbyTasks"));
  EXPECT_TRUE(g.null("WarmupTasks"));
  EXPECT_TRUE(g.b("TopologyDescriptionRequired"));
  EXPECT_EQ(g.i("EndpointInformationEpoch"), 1);
  EXPECT_TRUE(g.null("PartitionsByUserEndpoint"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupHeartbeatResponseKeepsATaggedFieldUnknownToTheSpec) {
  const std::vector<uint8_t> unknown = {0x0a, 0x0b, 0x0c};
  Bytes b = response_header_v1(13);
  b.i32(0)              // ThrottleTimeMs
      .i16(0)           // ErrorCode
      .cnull()          // ErrorMessage
      .cstr(kMemberId)  // MemberId
      .i32(2)           // MemberEpoch
      .i32(5000)        // HeartbeatIntervalMs
      .i32(60000)       // TaskOffsetIntervalMs
      .i64(-1)          // AcceptableRecoveryLag
      .cnull()          // Status
      .cnull()          // ActiveTasks
      .cnull()          // StandbyTasks
      .cnull()          // WarmupTasks
      .i8(0)            // TopologyDescriptionRequired
      .i32(1)           // EndpointInformationEpoch
      .cnull()          // PartitionsByUserEndpoint
      .uvarint(1)       // tagged fields: one
      .uvarint(42)      //  tag 42 (no such tag in the spec)
      .uvarint(3)       //  size
      .raw(unknown);

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kStreamsGroupHeartbeat, 1));
  g.expect_response("StreamsGroupHeartbeat", 1, 13, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "ErrorCode", "ErrorMessage", "MemberId", "MemberEpoch",
                                 "HeartbeatIntervalMs", "TaskOffsetIntervalMs", "AcceptableRecoveryLag", "Status",
                                 "ActiveTasks", "StandbyTasks", "WarmupTasks", "TopologyDescriptionRequired",
                                 "EndpointInformationEpoch", "PartitionsByUserEndpoint", "UnknownTaggedField"}));
  EXPECT_EQ(g.i("AcceptableRecoveryLag"), -1);
  EXPECT_TRUE(g.null("Status"));
  EXPECT_FALSE(g.b("TopologyDescriptionRequired"));
  EXPECT_EQ(g.i("EndpointInformationEpoch"), 1);

  const Node* tagged = nullptr;
  for (uint32_t c : Children(g.frame, g.frame.body))
    if (g.frame.nodes[c].desc == kDescUnknownTag) tagged = &g.frame.nodes[c];
  ASSERT_NE(tagged, nullptr);
  EXPECT_EQ(tagged->tag, 42u);
  EXPECT_EQ(tagged->aux, 3u);
  EXPECT_EQ(std::vector<uint8_t>(tagged->bytes().begin(), tagged->bytes().end()), unknown);
  g.expect_reencodes_byte_identical();
}

// ===========================================================================
// StreamsGroupDescribe (api key 89)

TEST(Golden, StreamsGroupDescribeRequestV0) {
  Bytes b = request_header_v2(kStreamsGroupDescribe, 0, 31, "adminclient-1");
  b.carr(2).cstr(kOrdersApp).cstr("order-totals")  // GroupIds
      .i8(1)                                       // IncludeAuthorizedOperations
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupDescribe", kStreamsGroupDescribe, 0, 31, "adminclient-1", 2);
  EXPECT_EQ(g.fields(""), (Names{"GroupIds", "IncludeAuthorizedOperations"}));
  EXPECT_EQ(g.strs("GroupIds"), (Strings{kOrdersApp, "order-totals"}));
  EXPECT_TRUE(g.b("IncludeAuthorizedOperations"));
  EXPECT_FALSE(g.has("IncludeTopologyDescription"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupDescribeRequestV1AsksForTheTopologyDescription) {
  Bytes b = request_header_v2(kStreamsGroupDescribe, 1, 32, "adminclient-1");
  b.carr(2).cstr(kOrdersApp).cstr("payments-app")  // GroupIds
      .i8(1)                                       // IncludeAuthorizedOperations
      .i8(1)                                       // IncludeTopologyDescription (v1+)
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupDescribe", kStreamsGroupDescribe, 1, 32, "adminclient-1", 2);
  EXPECT_EQ(g.fields(""), (Names{"GroupIds", "IncludeAuthorizedOperations", "IncludeTopologyDescription"}));
  EXPECT_EQ(g.strs("GroupIds"), (Strings{kOrdersApp, "payments-app"}));
  EXPECT_EQ(g.s("GroupIds[1]"), "payments-app");
  EXPECT_TRUE(g.b("IncludeAuthorizedOperations"));
  EXPECT_TRUE(g.b("IncludeTopologyDescription"));
  g.expect_reencodes_byte_identical();
}

namespace {

const Names kDescribedGroupV0Fields{"ErrorCode", "ErrorMessage", "GroupId", "GroupState", "GroupEpoch",
                                    "AssignmentEpoch", "Topology", "Members", "AuthorizedOperations"};
const Names kDescribedGroupV1Fields{"ErrorCode", "ErrorMessage", "GroupId", "GroupState", "GroupEpoch",
                                    "AssignmentEpoch", "Topology", "Members", "AuthorizedOperations",
                                    "TopologyDescription", "TopologyDescriptionStatus", "AssignorName"};
const Names kMemberFields{"MemberId", "MemberEpoch", "InstanceId", "RackId", "ClientId", "ClientHost",
                          "TopologyEpoch", "ProcessId", "UserEndpoint", "ClientTags", "TaskOffsets",
                          "TaskEndOffsets", "Assignment", "TargetAssignment", "IsClassic"};

// The group's current topology for the appendix application
// (StreamsGroupDescribeResponse Topology, flexible).
void describe_appendix_topology(Bytes& b) {
  b.i8(1)                      // Topology: present
      .i32(0)                  //  Epoch
      .carr(1)                 //  Subtopologies
      .cstr("0")               //   [0] SubtopologyId
      .carr(1).cstr("orders")  //       SourceTopics
      .carr(0)                 //       RepartitionSinkTopics
      .carr(0)                 //       StateChangelogTopics
      .carr(0)                 //       RepartitionSourceTopics
      .tags0()
      .tags0();
}

void expect_describe_appendix_topology(const Golden& g, const std::string& at) {
  EXPECT_EQ(g.fields(at), (Names{"Epoch", "Subtopologies"}));
  EXPECT_EQ(g.i(at + ".Epoch"), 0);
  EXPECT_EQ(g.count(at + ".Subtopologies"), 1);
  EXPECT_EQ(g.fields(at + ".Subtopologies[0]"),
            (Names{"SubtopologyId", "SourceTopics", "RepartitionSinkTopics", "StateChangelogTopics",
                   "RepartitionSourceTopics"}));
  EXPECT_EQ(g.s(at + ".Subtopologies[0].SubtopologyId"), "0");
  EXPECT_EQ(g.strs(at + ".Subtopologies[0].SourceTopics"), (Strings{"orders"}));
  EXPECT_EQ(g.count(at + ".Subtopologies[0].RepartitionSinkTopics"), 0);
  EXPECT_EQ(g.count(at + ".Subtopologies[0].StateChangelogTopics"), 0);
  EXPECT_EQ(g.count(at + ".Subtopologies[0].RepartitionSourceTopics"), 0);
}

// Assignment struct (not nullable): active tasks 0_0, 0_1, 0_2.
void describe_assignment(Bytes& b) {
  b.carr(1).cstr("0").carr(3).i32(0).i32(1).i32(2).tags0()  // ActiveTasks
      .carr(0)                                              // StandbyTasks
      .carr(0)                                              // WarmupTasks
      .tags0();
}

void expect_describe_assignment(const Golden& g, const std::string& at) {
  EXPECT_EQ(g.fields(at), (Names{"ActiveTasks", "StandbyTasks", "WarmupTasks"}));
  EXPECT_EQ(g.count(at + ".ActiveTasks"), 1);
  EXPECT_EQ(g.s(at + ".ActiveTasks[0].SubtopologyId"), "0");
  EXPECT_EQ(g.ints(at + ".ActiveTasks[0].Partitions"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.count(at + ".StandbyTasks"), 0);
  EXPECT_EQ(g.count(at + ".WarmupTasks"), 0);
}

constexpr int32_t kGroupReadDescribeDelete = (1 << 3) | (1 << 6) | (1 << 8);  // READ, DELETE, DESCRIBE

}  // namespace

TEST(Golden, StreamsGroupDescribeResponseV0StableGroupAndUnknownGroup) {
  Bytes b = response_header_v1(31);
  b.i32(0)                            // ThrottleTimeMs
      .carr(2);                       // Groups
  b.i16(0)                            //  [0] ErrorCode
      .cnull()                        //      ErrorMessage
      .cstr(kOrdersApp)               //      GroupId
      .cstr("Stable")                 //      GroupState
      .i32(3)                         //      GroupEpoch
      .i32(3);                        //      AssignmentEpoch
  describe_appendix_topology(b);      //      Topology
  b.carr(1)                           //      Members
      .cstr(kMemberId)                //       [0] MemberId
      .i32(3)                         //           MemberEpoch
      .cstr("orders-app-0")           //           InstanceId
      .cnull()                        //           RackId
      .cstr(kStreamsClientId)         //           ClientId
      .cstr("/10.0.3.17")             //           ClientHost
      .i32(0)                         //           TopologyEpoch
      .cstr(kProcessId)               //           ProcessId
      .i8(1)                          //           UserEndpoint: present
      .cstr("10.0.3.17")              //            Host
      .i16(50000)                     //            Port (uint16: above 32767)
      .tags0()
      .carr(1).cstr("az").cstr("eu-west-1a").tags0()  // ClientTags
      .carr(0)                        //           TaskOffsets
      .carr(0);                       //           TaskEndOffsets
  describe_assignment(b);             //           Assignment
  describe_assignment(b);             //           TargetAssignment
  b.i8(0)                             //           IsClassic
      .tags0()
      .i32(kGroupReadDescribeDelete)  //      AuthorizedOperations
      .tags0();
  b.i16(69)                           //  [1] ErrorCode: GROUP_ID_NOT_FOUND
      .cstr("Group order-totals is not a streams group.")  // ErrorMessage
      .cstr("order-totals")           //      GroupId
      .cstr("Dead")                   //      GroupState
      .i32(-1)                        //      GroupEpoch
      .i32(-1)                        //      AssignmentEpoch
      .i8(-1)                         //      Topology: null
      .carr(0)                        //      Members
      .i32(kNoAuthorizedOperations)   //      AuthorizedOperations
      .tags0();
  b.tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kStreamsGroupDescribe, 0));
  g.expect_response("StreamsGroupDescribe", 0, 31, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "Groups"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.count("Groups"), 2);

  EXPECT_EQ(g.fields("Groups[0]"), kDescribedGroupV0Fields);
  EXPECT_EQ(g.i("Groups[0].ErrorCode"), 0);
  EXPECT_TRUE(g.null("Groups[0].ErrorMessage"));
  EXPECT_EQ(g.s("Groups[0].GroupId"), kOrdersApp);
  EXPECT_EQ(g.s("Groups[0].GroupState"), "Stable");
  EXPECT_EQ(g.i("Groups[0].GroupEpoch"), 3);
  EXPECT_EQ(g.i("Groups[0].AssignmentEpoch"), 3);
  expect_describe_appendix_topology(g, "Groups[0].Topology");
  EXPECT_EQ(g.count("Groups[0].Members"), 1);
  const std::string m = "Groups[0].Members[0]";
  EXPECT_EQ(g.fields(m), kMemberFields);
  EXPECT_EQ(g.s(m + ".MemberId"), kMemberId);
  EXPECT_EQ(g.i(m + ".MemberEpoch"), 3);
  EXPECT_EQ(g.s(m + ".InstanceId"), "orders-app-0");
  EXPECT_TRUE(g.null(m + ".RackId"));
  EXPECT_EQ(g.s(m + ".ClientId"), kStreamsClientId);
  EXPECT_EQ(g.s(m + ".ClientHost"), "/10.0.3.17");
  EXPECT_EQ(g.i(m + ".TopologyEpoch"), 0);
  EXPECT_EQ(g.s(m + ".ProcessId"), kProcessId);
  EXPECT_EQ(g.fields(m + ".UserEndpoint"), (Names{"Host", "Port"}));
  EXPECT_EQ(g.s(m + ".UserEndpoint.Host"), "10.0.3.17");
  EXPECT_EQ(g.i(m + ".UserEndpoint.Port"), 50000);
  EXPECT_EQ(g.count(m + ".ClientTags"), 1);
  EXPECT_EQ(g.s(m + ".ClientTags[0].Key"), "az");
  EXPECT_EQ(g.s(m + ".ClientTags[0].Value"), "eu-west-1a");
  EXPECT_EQ(g.count(m + ".TaskOffsets"), 0);
  EXPECT_EQ(g.count(m + ".TaskEndOffsets"), 0);
  expect_describe_assignment(g, m + ".Assignment");
  expect_describe_assignment(g, m + ".TargetAssignment");
  EXPECT_FALSE(g.b(m + ".IsClassic"));
  EXPECT_EQ(g.i("Groups[0].AuthorizedOperations"), kGroupReadDescribeDelete);
  EXPECT_FALSE(g.has("Groups[0].TopologyDescription"));
  EXPECT_FALSE(g.has("Groups[0].TopologyDescriptionStatus"));
  EXPECT_FALSE(g.has("Groups[0].AssignorName"));

  EXPECT_EQ(g.fields("Groups[1]"), kDescribedGroupV0Fields);
  EXPECT_EQ(g.i("Groups[1].ErrorCode"), 69);
  EXPECT_EQ(g.code("Groups[1].ErrorCode"), "GROUP_ID_NOT_FOUND");
  EXPECT_EQ(g.s("Groups[1].ErrorMessage"), "Group order-totals is not a streams group.");
  EXPECT_EQ(g.s("Groups[1].GroupId"), "order-totals");
  EXPECT_EQ(g.s("Groups[1].GroupState"), "Dead");
  EXPECT_EQ(g.i("Groups[1].GroupEpoch"), -1);
  EXPECT_EQ(g.i("Groups[1].AssignmentEpoch"), -1);
  EXPECT_TRUE(g.null("Groups[1].Topology"));
  EXPECT_EQ(g.count("Groups[1].Members"), 0);
  EXPECT_EQ(g.i("Groups[1].AuthorizedOperations"), kNoAuthorizedOperations);
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupDescribeResponseV1WithAndWithoutTopologyDescription) {
  Bytes b = response_header_v1(32);
  b.i32(0)                            // ThrottleTimeMs
      .carr(2);                       // Groups
  b.i16(0)                            //  [0] ErrorCode
      .cnull()                        //      ErrorMessage
      .cstr(kOrdersApp)               //      GroupId
      .cstr("Stable")                 //      GroupState
      .i32(3)                         //      GroupEpoch
      .i32(3);                        //      AssignmentEpoch
  describe_appendix_topology(b);      //      Topology
  b.carr(1)                           //      Members
      .cstr(kMemberId)                //       [0] MemberId
      .i32(3)                         //           MemberEpoch
      .cnull()                        //           InstanceId
      .cstr("eu-west-1a")             //           RackId
      .cstr(kStreamsClientId)         //           ClientId
      .cstr("/10.0.3.17")             //           ClientHost
      .i32(0)                         //           TopologyEpoch
      .cstr(kProcessId)               //           ProcessId
      .i8(-1)                         //           UserEndpoint: null
      .carr(0)                        //           ClientTags
      .carr(1).cstr("0").i32(2).i64(42).tags0()  // TaskOffsets
      .carr(1).cstr("0").i32(2).i64(42).tags0(); // TaskEndOffsets
  describe_assignment(b);             //           Assignment
  describe_assignment(b);             //           TargetAssignment
  b.i8(0)                             //           IsClassic
      .tags0()
      .i32(kGroupReadDescribeDelete)  //      AuthorizedOperations
      .i8(1);                         //      TopologyDescription: present
  appendix_description_subtopologies(b);  //   Subtopologies
  b.carr(0)                           //       GlobalStores
      .tags0()
      .i8(3)                          //      TopologyDescriptionStatus: AVAILABLE
      .cstr("sticky")                 //      AssignorName
      .tags0();
  b.i16(0)                            //  [1] ErrorCode
      .cnull()                        //      ErrorMessage
      .cstr("payments-app")           //      GroupId
      .cstr("Empty")                  //      GroupState
      .i32(7)                         //      GroupEpoch
      .i32(7)                         //      AssignmentEpoch
      .i8(1)                          //      Topology: present
      .i32(2)                         //       Epoch
      .cnull()                        //       Subtopologies: null
      .tags0()
      .carr(0)                        //      Members
      .i32(kGroupReadDescribeDelete)  //      AuthorizedOperations
      .i8(-1)                         //      TopologyDescription: null
      .i8(1)                          //      TopologyDescriptionStatus: NOT_STORED
      .cnull()                        //      AssignorName
      .tags0();
  b.tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kStreamsGroupDescribe, 1));
  g.expect_response("StreamsGroupDescribe", 1, 32, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "Groups"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.count("Groups"), 2);

  EXPECT_EQ(g.fields("Groups[0]"), kDescribedGroupV1Fields);
  EXPECT_EQ(g.i("Groups[0].ErrorCode"), 0);
  EXPECT_TRUE(g.null("Groups[0].ErrorMessage"));
  EXPECT_EQ(g.s("Groups[0].GroupId"), kOrdersApp);
  EXPECT_EQ(g.s("Groups[0].GroupState"), "Stable");
  EXPECT_EQ(g.i("Groups[0].GroupEpoch"), 3);
  EXPECT_EQ(g.i("Groups[0].AssignmentEpoch"), 3);
  expect_describe_appendix_topology(g, "Groups[0].Topology");
  EXPECT_EQ(g.count("Groups[0].Members"), 1);
  const std::string m = "Groups[0].Members[0]";
  EXPECT_EQ(g.fields(m), kMemberFields);
  EXPECT_EQ(g.s(m + ".MemberId"), kMemberId);
  EXPECT_EQ(g.i(m + ".MemberEpoch"), 3);
  EXPECT_TRUE(g.null(m + ".InstanceId"));
  EXPECT_EQ(g.s(m + ".RackId"), "eu-west-1a");
  EXPECT_EQ(g.s(m + ".ClientId"), kStreamsClientId);
  EXPECT_EQ(g.s(m + ".ClientHost"), "/10.0.3.17");
  EXPECT_EQ(g.i(m + ".TopologyEpoch"), 0);
  EXPECT_EQ(g.s(m + ".ProcessId"), kProcessId);
  EXPECT_TRUE(g.null(m + ".UserEndpoint"));
  EXPECT_EQ(g.count(m + ".ClientTags"), 0);
  EXPECT_EQ(g.count(m + ".TaskOffsets"), 1);
  EXPECT_EQ(g.s(m + ".TaskOffsets[0].SubtopologyId"), "0");
  EXPECT_EQ(g.i(m + ".TaskOffsets[0].Partition"), 2);
  EXPECT_EQ(g.i(m + ".TaskOffsets[0].Offset"), 42);
  EXPECT_EQ(g.count(m + ".TaskEndOffsets"), 1);
  EXPECT_EQ(g.s(m + ".TaskEndOffsets[0].SubtopologyId"), "0");
  EXPECT_EQ(g.i(m + ".TaskEndOffsets[0].Partition"), 2);
  EXPECT_EQ(g.i(m + ".TaskEndOffsets[0].Offset"), 42);
  expect_describe_assignment(g, m + ".Assignment");
  expect_describe_assignment(g, m + ".TargetAssignment");
  EXPECT_FALSE(g.b(m + ".IsClassic"));
  EXPECT_EQ(g.i("Groups[0].AuthorizedOperations"), kGroupReadDescribeDelete);
  EXPECT_FALSE(g.null("Groups[0].TopologyDescription"));
  EXPECT_EQ(g.fields("Groups[0].TopologyDescription"), (Names{"Subtopologies", "GlobalStores"}));
  expect_appendix_description_subtopologies(g, "Groups[0].TopologyDescription");
  EXPECT_EQ(g.count("Groups[0].TopologyDescription.GlobalStores"), 0);
  EXPECT_EQ(g.i("Groups[0].TopologyDescriptionStatus"), 3);
  EXPECT_EQ(g.code("Groups[0].TopologyDescriptionStatus"), "AVAILABLE");
  const Node* status = g.node("Groups[0].TopologyDescriptionStatus");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(code_name("StreamsGroupDescribe", g.ps.field(status->desc), 3), std::string_view("AVAILABLE"));
  EXPECT_EQ(g.s("Groups[0].AssignorName"), "sticky");

  EXPECT_EQ(g.fields("Groups[1]"), kDescribedGroupV1Fields);
  EXPECT_EQ(g.i("Groups[1].ErrorCode"), 0);
  EXPECT_TRUE(g.null("Groups[1].ErrorMessage"));
  EXPECT_EQ(g.s("Groups[1].GroupId"), "payments-app");
  EXPECT_EQ(g.s("Groups[1].GroupState"), "Empty");
  EXPECT_EQ(g.i("Groups[1].GroupEpoch"), 7);
  EXPECT_EQ(g.i("Groups[1].AssignmentEpoch"), 7);
  EXPECT_EQ(g.fields("Groups[1].Topology"), (Names{"Epoch", "Subtopologies"}));
  EXPECT_EQ(g.i("Groups[1].Topology.Epoch"), 2);
  EXPECT_TRUE(g.null("Groups[1].Topology.Subtopologies"));
  EXPECT_EQ(g.count("Groups[1].Members"), 0);
  EXPECT_EQ(g.i("Groups[1].AuthorizedOperations"), kGroupReadDescribeDelete);
  EXPECT_TRUE(g.null("Groups[1].TopologyDescription"));
  EXPECT_EQ(g.i("Groups[1].TopologyDescriptionStatus"), 1);
  EXPECT_EQ(g.code("Groups[1].TopologyDescriptionStatus"), "NOT_STORED");
  EXPECT_TRUE(g.null("Groups[1].AssignorName"));
  g.expect_reencodes_byte_identical();
}

// ===========================================================================
// StreamsGroupTopologyDescriptionUpdate (api key 93)

TEST(Golden, StreamsGroupTopologyDescriptionUpdateRequestV0PushesTheAppendixTopology) {
  Bytes b = request_header_v2(kStreamsGroupTopologyDescriptionUpdate, 0, 41, kStreamsClientId);
  b.cstr(kOrdersApp)   // GroupId
      .cstr(kMemberId)  // MemberId
      .i32(0);          // TopologyEpoch
  // TopologyDescription: not nullable, so no presence byte.
  appendix_description_subtopologies(b);  // Subtopologies
  b.carr(0)                               // GlobalStores
      .tags0()
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupTopologyDescriptionUpdate", kStreamsGroupTopologyDescriptionUpdate, 0, 41,
                   kStreamsClientId, 2);
  EXPECT_EQ(g.fields(""), (Names{"GroupId", "MemberId", "TopologyEpoch", "TopologyDescription"}));
  EXPECT_EQ(g.s("GroupId"), kOrdersApp);
  EXPECT_EQ(g.s("MemberId"), kMemberId);
  EXPECT_EQ(g.i("TopologyEpoch"), 0);
  EXPECT_EQ(g.fields("TopologyDescription"), (Names{"Subtopologies", "GlobalStores"}));
  expect_appendix_description_subtopologies(g, "TopologyDescription");
  EXPECT_EQ(g.count("TopologyDescription.GlobalStores"), 0);
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupTopologyDescriptionUpdateRequestV0WithAGlobalStore) {
  // The appendix application plus a global store fed from currency-rates.
  Bytes b = request_header_v2(kStreamsGroupTopologyDescriptionUpdate, 0, 42, kStreamsClientId);
  b.cstr(kOrdersApp)   // GroupId
      .cstr(kMemberId)  // MemberId
      .i32(1);          // TopologyEpoch
  appendix_description_subtopologies(b);  // TopologyDescription.Subtopologies
  b.carr(1)                               // GlobalStores
      .cstr("KSTREAM-SOURCE-0000000003")  //  [0] Source.Name
      .i8(1)                              //      Source.NodeType
      .carr(1).cstr("currency-rates")     //      Source.SourceTopics
      .cnull()                            //      Source.SinkTopic
      .carr(0)                            //      Source.Stores
      .carr(1).cstr("KTABLE-SOURCE-0000000004")  // Source.Successors
      .tags0()
      .cstr("KTABLE-SOURCE-0000000004")   //      Processor.Name
      .i8(2)                              //      Processor.NodeType
      .carr(0)                            //      Processor.SourceTopics
      .cnull()                            //      Processor.SinkTopic
      .carr(1).cstr("currency-rates-store")  //   Processor.Stores
      .carr(0)                            //      Processor.Successors
      .tags0()
      .tags0()                            //  (end of global store)
      .tags0()                            // (end of TopologyDescription)
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("StreamsGroupTopologyDescriptionUpdate", kStreamsGroupTopologyDescriptionUpdate, 0, 42,
                   kStreamsClientId, 2);
  EXPECT_EQ(g.fields(""), (Names{"GroupId", "MemberId", "TopologyEpoch", "TopologyDescription"}));
  EXPECT_EQ(g.s("GroupId"), kOrdersApp);
  EXPECT_EQ(g.s("MemberId"), kMemberId);
  EXPECT_EQ(g.i("TopologyEpoch"), 1);
  expect_appendix_description_subtopologies(g, "TopologyDescription");
  EXPECT_EQ(g.count("TopologyDescription.GlobalStores"), 1);
  const std::string gs = "TopologyDescription.GlobalStores[0]";
  EXPECT_EQ(g.fields(gs), (Names{"Source", "Processor"}));
  EXPECT_EQ(g.s(gs + ".Source.Name"), "KSTREAM-SOURCE-0000000003");
  EXPECT_EQ(g.i(gs + ".Source.NodeType"), 1);
  EXPECT_EQ(g.code(gs + ".Source.NodeType"), "SOURCE");
  EXPECT_EQ(g.strs(gs + ".Source.SourceTopics"), (Strings{"currency-rates"}));
  EXPECT_TRUE(g.null(gs + ".Source.SinkTopic"));
  EXPECT_EQ(g.count(gs + ".Source.Stores"), 0);
  EXPECT_EQ(g.strs(gs + ".Source.Successors"), (Strings{"KTABLE-SOURCE-0000000004"}));
  EXPECT_EQ(g.s(gs + ".Processor.Name"), "KTABLE-SOURCE-0000000004");
  EXPECT_EQ(g.i(gs + ".Processor.NodeType"), 2);
  EXPECT_EQ(g.code(gs + ".Processor.NodeType"), "PROCESSOR");
  EXPECT_EQ(g.count(gs + ".Processor.SourceTopics"), 0);
  EXPECT_TRUE(g.null(gs + ".Processor.SinkTopic"));
  EXPECT_EQ(g.strs(gs + ".Processor.Stores"), (Strings{"currency-rates-store"}));
  EXPECT_EQ(g.count(gs + ".Processor.Successors"), 0);
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupTopologyDescriptionUpdateResponseV0Accepted) {
  Bytes b = response_header_v1(41);
  b.i32(0)       // ThrottleTimeMs
      .i16(0)    // ErrorCode
      .cnull()   // ErrorMessage
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kStreamsGroupTopologyDescriptionUpdate, 0));
  g.expect_response("StreamsGroupTopologyDescriptionUpdate", 0, 41, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "ErrorCode", "ErrorMessage"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.i("ErrorCode"), 0);
  EXPECT_EQ(g.code("ErrorCode"), "NONE");
  EXPECT_TRUE(g.null("ErrorMessage"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, StreamsGroupTopologyDescriptionUpdateResponseV0PluginFailed) {
  const std::string message = "topology store unavailable: connection refused";
  Bytes b = response_header_v1(42);
  b.i32(25)            // ThrottleTimeMs
      .i16(135)        // ErrorCode: STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED
      .cstr(message)   // ErrorMessage
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kStreamsGroupTopologyDescriptionUpdate, 0));
  g.expect_response("StreamsGroupTopologyDescriptionUpdate", 0, 42, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "ErrorCode", "ErrorMessage"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 25);
  EXPECT_EQ(g.i("ErrorCode"), 135);
  EXPECT_EQ(error_name(135), std::string_view("STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED"));
  EXPECT_EQ(g.code("ErrorCode"), "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED");
  EXPECT_EQ(g.s("ErrorMessage"), message);
  g.expect_reencodes_byte_identical();
}

// ===========================================================================
// DeleteGroups (api key 42): v0-1 classic, v2+ flexible, v3 adds ErrorMessage.

TEST(Golden, DeleteGroupsRequestV0AndV1Classic) {
  for (int version : {0, 1}) {
    SCOPED_TRACE("DeleteGroups request v" + std::to_string(version));
    Bytes b = request_header_v1(kDeleteGroups, version, 50 + version, "adminclient-1");
    b.i32(2)                   // GroupsNames: int32 count
        .str(kOrdersApp)       //  int16-length strings
        .str("payments-app");

    Golden g(b);
    ASSERT_TRUE(g.decode_request());
    g.expect_request("DeleteGroups", kDeleteGroups, version, 50 + version, "adminclient-1", 1);
    EXPECT_FALSE(g.frame.program->flexible);
    EXPECT_EQ(g.fields(""), (Names{"GroupsNames"}));
    EXPECT_EQ(g.count("GroupsNames"), 2);
    EXPECT_EQ(g.s("GroupsNames[0]"), kOrdersApp);
    EXPECT_EQ(g.s("GroupsNames[1]"), "payments-app");
    g.expect_reencodes_byte_identical();
  }
}

TEST(Golden, DeleteGroupsRequestV2AndV3Flexible) {
  for (int version : {2, 3}) {
    SCOPED_TRACE("DeleteGroups request v" + std::to_string(version));
    Bytes b = request_header_v2(kDeleteGroups, version, 50 + version, "adminclient-1");
    b.carr(2)                    // GroupsNames: compact
        .cstr(kOrdersApp)
        .cstr("payments-app")
        .tags0();

    Golden g(b);
    ASSERT_TRUE(g.decode_request());
    g.expect_request("DeleteGroups", kDeleteGroups, version, 50 + version, "adminclient-1", 2);
    EXPECT_TRUE(g.frame.program->flexible);
    EXPECT_EQ(g.fields(""), (Names{"GroupsNames"}));
    EXPECT_EQ(g.strs("GroupsNames"), (Strings{kOrdersApp, "payments-app"}));
    g.expect_reencodes_byte_identical();
  }
}

TEST(Golden, DeleteGroupsResponseV0AndV1Classic) {
  for (int version : {0, 1}) {
    SCOPED_TRACE("DeleteGroups response v" + std::to_string(version));
    Bytes b = response_header_v0(50 + version);
    b.i32(0)                                   // ThrottleTimeMs
        .i32(2)                                // Results: int32 count
        .str(kOrdersApp).i16(0)                //  [0] GroupId, ErrorCode
        .str("payments-app").i16(68);          //  [1] GroupId, ErrorCode NON_EMPTY_GROUP

    Golden g(b);
    ASSERT_TRUE(g.decode_response(kDeleteGroups, version));
    g.expect_response("DeleteGroups", version, 50 + version, 0);
    EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "Results"}));
    EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
    EXPECT_EQ(g.count("Results"), 2);
    EXPECT_EQ(g.fields("Results[0]"), (Names{"GroupId", "ErrorCode"}));
    EXPECT_EQ(g.s("Results[0].GroupId"), kOrdersApp);
    EXPECT_EQ(g.i("Results[0].ErrorCode"), 0);
    EXPECT_EQ(g.fields("Results[1]"), (Names{"GroupId", "ErrorCode"}));
    EXPECT_EQ(g.s("Results[1].GroupId"), "payments-app");
    EXPECT_EQ(g.i("Results[1].ErrorCode"), 68);
    EXPECT_EQ(g.code("Results[1].ErrorCode"), "NON_EMPTY_GROUP");
    for (const char* result : {"Results[0]", "Results[1]"}) {
      const Node* r = g.node(result);
      ASSERT_NE(r, nullptr);
      EXPECT_EQ(find_field(g.frame, g.ps, static_cast<uint32_t>(r - g.frame.nodes.data()), "ErrorMessage"), nullptr);
    }
    g.expect_reencodes_byte_identical();
  }
}

TEST(Golden, DeleteGroupsResponseV2Flexible) {
  Bytes b = response_header_v1(52);
  b.i32(0)                                      // ThrottleTimeMs
      .carr(2)                                  // Results
      .cstr(kOrdersApp).i16(0).tags0()          //  [0] GroupId, ErrorCode
      .cstr("payments-app").i16(68).tags0()     //  [1] GroupId, ErrorCode NON_EMPTY_GROUP
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kDeleteGroups, 2));
  g.expect_response("DeleteGroups", 2, 52, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "Results"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.count("Results"), 2);
  EXPECT_EQ(g.fields("Results[0]"), (Names{"GroupId", "ErrorCode"}));
  EXPECT_EQ(g.s("Results[0].GroupId"), kOrdersApp);
  EXPECT_EQ(g.i("Results[0].ErrorCode"), 0);
  EXPECT_EQ(g.s("Results[1].GroupId"), "payments-app");
  EXPECT_EQ(g.i("Results[1].ErrorCode"), 68);
  for (const char* result : {"Results[0]", "Results[1]"}) {
    const Node* r = g.node(result);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(find_field(g.frame, g.ps, static_cast<uint32_t>(r - g.frame.nodes.data()), "ErrorMessage"), nullptr);
  }
  g.expect_reencodes_byte_identical();
}

TEST(Golden, DeleteGroupsResponseV3WithPerGroupErrorMessage) {
  const std::string message = "deleting the stored topology description failed: store timed out";
  Bytes b = response_header_v1(53);
  b.i32(0)                      // ThrottleTimeMs
      .carr(2)                  // Results
      .cstr(kOrdersApp)         //  [0] GroupId
      .i16(0)                   //      ErrorCode
      .cnull()                  //      ErrorMessage (v3+)
      .tags0()
      .cstr("payments-app")     //  [1] GroupId
      .i16(134)                 //      ErrorCode: GROUP_DELETION_FAILED
      .cstr(message)            //      ErrorMessage
      .tags0()
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kDeleteGroups, 3));
  g.expect_response("DeleteGroups", 3, 53, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "Results"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.count("Results"), 2);
  EXPECT_EQ(g.fields("Results[0]"), (Names{"GroupId", "ErrorCode", "ErrorMessage"}));
  EXPECT_EQ(g.s("Results[0].GroupId"), kOrdersApp);
  EXPECT_EQ(g.i("Results[0].ErrorCode"), 0);
  EXPECT_TRUE(g.null("Results[0].ErrorMessage"));
  EXPECT_EQ(g.fields("Results[1]"), (Names{"GroupId", "ErrorCode", "ErrorMessage"}));
  EXPECT_EQ(g.s("Results[1].GroupId"), "payments-app");
  EXPECT_EQ(g.i("Results[1].ErrorCode"), 134);
  EXPECT_EQ(g.code("Results[1].ErrorCode"), "GROUP_DELETION_FAILED");
  EXPECT_EQ(g.s("Results[1].ErrorMessage"), message);
  g.expect_reencodes_byte_identical();
}

// ===========================================================================
// DescribeTopicPartitions (api key 75)

TEST(Golden, DescribeTopicPartitionsRequestV0FirstPageWithoutCursor) {
  Bytes b = request_header_v2(kDescribeTopicPartitions, 0, 61, "adminclient-1");
  b.carr(2)                         // Topics
      .cstr("orders").tags0()       //  [0] Name
      .cstr("payments").tags0()     //  [1] Name
      .i32(2000)                    // ResponsePartitionLimit
      .i8(-1)                       // Cursor: null
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("DescribeTopicPartitions", kDescribeTopicPartitions, 0, 61, "adminclient-1", 2);
  EXPECT_EQ(g.fields(""), (Names{"Topics", "ResponsePartitionLimit", "Cursor"}));
  EXPECT_EQ(g.count("Topics"), 2);
  EXPECT_EQ(g.fields("Topics[0]"), (Names{"Name"}));
  EXPECT_EQ(g.s("Topics[0].Name"), "orders");
  EXPECT_EQ(g.s("Topics[1].Name"), "payments");
  EXPECT_EQ(g.i("ResponsePartitionLimit"), 2000);
  EXPECT_TRUE(g.null("Cursor"));
  g.expect_reencodes_byte_identical();
}

TEST(Golden, DescribeTopicPartitionsRequestV0NextPageWithCursor) {
  Bytes b = request_header_v2(kDescribeTopicPartitions, 0, 62, "adminclient-1");
  b.carr(1)                         // Topics
      .cstr("orders").tags0()       //  [0] Name
      .i32(1)                       // ResponsePartitionLimit
      .i8(1)                        // Cursor: present
      .cstr("orders")               //  TopicName
      .i32(3)                       //  PartitionIndex
      .tags0()
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("DescribeTopicPartitions", kDescribeTopicPartitions, 0, 62, "adminclient-1", 2);
  EXPECT_EQ(g.fields(""), (Names{"Topics", "ResponsePartitionLimit", "Cursor"}));
  EXPECT_EQ(g.count("Topics"), 1);
  EXPECT_EQ(g.s("Topics[0].Name"), "orders");
  EXPECT_EQ(g.i("ResponsePartitionLimit"), 1);
  EXPECT_FALSE(g.null("Cursor"));
  EXPECT_EQ(g.fields("Cursor"), (Names{"TopicName", "PartitionIndex"}));
  EXPECT_EQ(g.s("Cursor.TopicName"), "orders");
  EXPECT_EQ(g.i("Cursor.PartitionIndex"), 3);
  g.expect_reencodes_byte_identical();
}

namespace {

// 550e8400-e29b-41d4-a716-446655440000
const std::vector<uint8_t> kOrdersTopicId = {0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4,
                                             0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00};
const Names kTopicFields{"ErrorCode", "Name", "TopicId", "IsInternal", "Partitions", "TopicAuthorizedOperations"};
const Names kPartitionFields{"ErrorCode", "PartitionIndex", "LeaderId", "LeaderEpoch", "ReplicaNodes",
                             "IsrNodes", "EligibleLeaderReplicas", "LastKnownElr", "OfflineReplicas"};

}  // namespace

TEST(Golden, DescribeTopicPartitionsResponseV0WithNextCursor) {
  // The example of the DescribeTopicPartitions v0 wire-format page.
  Bytes b = response_header_v1(61);
  b.i32(0)                                // ThrottleTimeMs
      .carr(1)                            // Topics
      .i16(0)                             //  [0] ErrorCode
      .cstr("orders")                     //      Name
      .raw(kOrdersTopicId)                //      TopicId
      .i8(0)                              //      IsInternal
      .carr(1)                            //      Partitions
      .i16(0)                             //       [0] ErrorCode
      .i32(3)                             //           PartitionIndex
      .i32(1)                             //           LeaderId
      .i32(17)                            //           LeaderEpoch
      .carr(3).i32(0).i32(1).i32(2)       //           ReplicaNodes
      .carr(3).i32(0).i32(1).i32(2)       //           IsrNodes
      .carr(3).i32(0).i32(1).i32(2)       //           EligibleLeaderReplicas
      .carr(3).i32(1).i32(2).i32(3)       //           LastKnownElr
      .carr(3).i32(0).i32(1).i32(2)       //           OfflineReplicas
      .tags0()
      .i32(2)                             //      TopicAuthorizedOperations
      .tags0()
      .i8(1)                              // NextCursor: present
      .cstr("orders")                     //  TopicName
      .i32(3)                             //  PartitionIndex
      .tags0()
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kDescribeTopicPartitions, 0));
  g.expect_response("DescribeTopicPartitions", 0, 61, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "Topics", "NextCursor"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.count("Topics"), 1);
  EXPECT_EQ(g.fields("Topics[0]"), kTopicFields);
  EXPECT_EQ(g.i("Topics[0].ErrorCode"), 0);
  EXPECT_EQ(g.s("Topics[0].Name"), "orders");
  EXPECT_EQ(g.uuid("Topics[0].TopicId"), kOrdersTopicId);
  EXPECT_FALSE(g.b("Topics[0].IsInternal"));
  EXPECT_EQ(g.count("Topics[0].Partitions"), 1);
  const std::string p = "Topics[0].Partitions[0]";
  EXPECT_EQ(g.fields(p), kPartitionFields);
  EXPECT_EQ(g.i(p + ".ErrorCode"), 0);
  EXPECT_EQ(g.i(p + ".PartitionIndex"), 3);
  EXPECT_EQ(g.i(p + ".LeaderId"), 1);
  EXPECT_EQ(g.i(p + ".LeaderEpoch"), 17);
  EXPECT_EQ(g.ints(p + ".ReplicaNodes"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.i(p + ".ReplicaNodes[2]"), 2);
  EXPECT_EQ(g.ints(p + ".IsrNodes"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.ints(p + ".EligibleLeaderReplicas"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.ints(p + ".LastKnownElr"), (Ints{1, 2, 3}));
  EXPECT_EQ(g.i(p + ".LastKnownElr[0]"), 1);
  EXPECT_EQ(g.ints(p + ".OfflineReplicas"), (Ints{0, 1, 2}));
  EXPECT_EQ(g.i("Topics[0].TopicAuthorizedOperations"), 2);
  EXPECT_FALSE(g.null("NextCursor"));
  EXPECT_EQ(g.fields("NextCursor"), (Names{"TopicName", "PartitionIndex"}));
  EXPECT_EQ(g.s("NextCursor.TopicName"), "orders");
  EXPECT_EQ(g.i("NextCursor.PartitionIndex"), 3);
  g.expect_reencodes_byte_identical();
}

TEST(Golden, DescribeTopicPartitionsResponseV0LastPageWithoutElr) {
  Bytes b = response_header_v1(62);
  b.i32(0)                                // ThrottleTimeMs
      .carr(2)                            // Topics
      .i16(0)                             //  [0] ErrorCode
      .cstr("payments")                   //      Name
      .uuid(0x2a)                         //      TopicId
      .i8(0)                              //      IsInternal
      .carr(1)                            //      Partitions
      .i16(0)                             //       [0] ErrorCode
      .i32(0)                             //           PartitionIndex
      .i32(2)                             //           LeaderId
      .i32(5)                             //           LeaderEpoch
      .carr(2).i32(2).i32(0)              //           ReplicaNodes
      .carr(1).i32(2)                     //           IsrNodes
      .cnull()                            //           EligibleLeaderReplicas: null
      .carr(0)                            //           LastKnownElr: empty
      .carr(0)                            //           OfflineReplicas
      .tags0()
      .i32(kNoAuthorizedOperations)       //      TopicAuthorizedOperations
      .tags0()
      .i16(3)                             //  [1] ErrorCode: UNKNOWN_TOPIC_OR_PARTITION
      .cstr("missing-topic")              //      Name
      .uuid(0)                            //      TopicId: zero
      .i8(0)                              //      IsInternal
      .carr(0)                            //      Partitions
      .i32(kNoAuthorizedOperations)       //      TopicAuthorizedOperations
      .tags0()
      .i8(-1)                             // NextCursor: null
      .tags0();

  Golden g(b);
  ASSERT_TRUE(g.decode_response(kDescribeTopicPartitions, 0));
  g.expect_response("DescribeTopicPartitions", 0, 62, 1);
  EXPECT_EQ(g.fields(""), (Names{"ThrottleTimeMs", "Topics", "NextCursor"}));
  EXPECT_EQ(g.i("ThrottleTimeMs"), 0);
  EXPECT_EQ(g.count("Topics"), 2);

  EXPECT_EQ(g.fields("Topics[0]"), kTopicFields);
  EXPECT_EQ(g.i("Topics[0].ErrorCode"), 0);
  EXPECT_EQ(g.s("Topics[0].Name"), "payments");
  EXPECT_EQ(g.uuid("Topics[0].TopicId"), std::vector<uint8_t>(16, 0x2a));
  EXPECT_FALSE(g.b("Topics[0].IsInternal"));
  EXPECT_EQ(g.count("Topics[0].Partitions"), 1);
  const std::string p = "Topics[0].Partitions[0]";
  EXPECT_EQ(g.fields(p), kPartitionFields);
  EXPECT_EQ(g.i(p + ".ErrorCode"), 0);
  EXPECT_EQ(g.i(p + ".PartitionIndex"), 0);
  EXPECT_EQ(g.i(p + ".LeaderId"), 2);
  EXPECT_EQ(g.i(p + ".LeaderEpoch"), 5);
  EXPECT_EQ(g.ints(p + ".ReplicaNodes"), (Ints{2, 0}));
  EXPECT_EQ(g.ints(p + ".IsrNodes"), (Ints{2}));
  EXPECT_TRUE(g.null(p + ".EligibleLeaderReplicas"));
  EXPECT_FALSE(g.null(p + ".LastKnownElr"));
  EXPECT_EQ(g.count(p + ".LastKnownElr"), 0);
  EXPECT_EQ(g.count(p + ".OfflineReplicas"), 0);
  EXPECT_EQ(g.i("Topics[0].TopicAuthorizedOperations"), kNoAuthorizedOperations);

  EXPECT_EQ(g.fields("Topics[1]"), kTopicFields);
  EXPECT_EQ(g.i("Topics[1].ErrorCode"), 3);
  EXPECT_EQ(g.code("Topics[1].ErrorCode"), "UNKNOWN_TOPIC_OR_PARTITION");
  EXPECT_EQ(g.s("Topics[1].Name"), "missing-topic");
  EXPECT_EQ(g.uuid("Topics[1].TopicId"), std::vector<uint8_t>(16, 0));
  EXPECT_FALSE(g.b("Topics[1].IsInternal"));
  EXPECT_EQ(g.count("Topics[1].Partitions"), 0);
  EXPECT_EQ(g.i("Topics[1].TopicAuthorizedOperations"), kNoAuthorizedOperations);

  EXPECT_TRUE(g.null("NextCursor"));
  EXPECT_EQ(g.fields("NextCursor"), Names{});
  g.expect_reencodes_byte_identical();
}

// ---------------------------------------------------------------------------
// Versions Kafka 4.0 dropped (KIP-896) and the ZooKeeper-era inter-broker
// APIs, read through Kafka 3.9.1's specs (specs/kafka-older/): traffic of
// older clients and brokers.

TEST(Golden, ProduceRequestV2FromAnOlderClientCarriesAMagicOneMessageSet) {
  const std::vector<uint8_t> set = encode_legacy_message(1, 0, 1700000000123, "order-17", "{\"qty\":3}");
  Bytes b = request_header_v1(0, 2, 11, "legacy-producer");
  b.i16(-1).i32(30000)             // Acks, TimeoutMs (TransactionalId only from v3)
      .i32(1).str("orders")        // TopicData[0].Name
      .i32(1).i32(4)               // PartitionData[0].Index
      .i32(static_cast<int64_t>(set.size())).raw(set);  // Records: int32 length, message set

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  g.expect_request("Produce", 0, 2, 11, "legacy-producer", 1);
  EXPECT_TRUE(g.frame.program->older);
  EXPECT_EQ(g.frame.program->origin, "kafka 3.9.1");
  EXPECT_EQ(g.fields(""), (Names{"Acks", "TimeoutMs", "TopicData"}));
  EXPECT_EQ(g.i("Acks"), -1);
  EXPECT_EQ(g.s("TopicData[0].Name"), "orders");
  EXPECT_EQ(g.i("TopicData[0].PartitionData[0].Index"), 4);
  const Node* records = g.node("TopicData[0].PartitionData[0].Records");
  ASSERT_NE(records, nullptr);
  const uint32_t ri = static_cast<uint32_t>(records - g.frame.nodes.data());
  std::vector<uint32_t> messages;
  for (uint32_t c : Children(g.frame, ri)) messages.push_back(c);
  ASSERT_EQ(messages.size(), 1u);
  const uint32_t msg = messages[0];
  EXPECT_EQ(g.frame.nodes[msg].desc, kDescLegacyMessage);
  std::string key, value;
  int64_t magic = -1, timestamp = -1;
  for (uint32_t c : Children(g.frame, msg)) {
    const Node& n = g.frame.nodes[c];
    if (n.desc == kDescLegacyMagic) magic = n.v.i;
    if (n.desc == kDescLegacyTimestamp) timestamp = n.v.i;
    if (n.desc == kDescLegacyKey) key = n.str();
    if (n.desc == kDescLegacyValue) value = n.str();
  }
  EXPECT_EQ(magic, 1);
  EXPECT_EQ(timestamp, 1700000000123);
  EXPECT_EQ(key, "order-17");
  EXPECT_EQ(value, "{\"qty\":3}");
  g.expect_reencodes_byte_identical();
}

TEST(Golden, FetchResponseV0HasNoThrottleTimeAndAMagicZeroMessageSet) {
  const std::vector<uint8_t> set = encode_legacy_message(0, 41, 0, std::nullopt, "hello");
  Bytes b = response_header_v0(12);
  b.i32(1).str("orders")              // Responses[0].Topic
      .i32(1).i32(4).i16(0).i64(42)   // Partitions[0]: PartitionIndex, ErrorCode, HighWatermark
      .i32(static_cast<int64_t>(set.size())).raw(set);

  Golden g(b);
  ASSERT_TRUE(g.decode_response(1, 0));
  g.expect_response("Fetch", 0, 12, 0);
  EXPECT_TRUE(g.frame.program->older);
  EXPECT_EQ(g.fields(""), (Names{"Responses"}));
  EXPECT_EQ(g.fields("Responses[0].Partitions[0]"),
            (Names{"PartitionIndex", "ErrorCode", "HighWatermark", "Records"}));
  EXPECT_EQ(g.i("Responses[0].Partitions[0].HighWatermark"), 42);
  g.expect_reencodes_byte_identical();
}

TEST(Golden, ControlledShutdownRequestV0HasAHeaderWithoutClientId) {
  Bytes b;
  b.i16(7).i16(0).i32(13)  // request header v0: api key, version, correlation id, no client id
      .i32(2);             // BrokerId

  Golden g(b);
  ASSERT_TRUE(g.decode_request());
  EXPECT_EQ(g.frame.header_version, 0);
  EXPECT_EQ(g.frame.program->api_name, "ControlledShutdown");
  EXPECT_TRUE(g.frame.program->older);
  EXPECT_EQ(g.frame.correlation_id, 13);
  EXPECT_EQ(g.fields(""), (Names{"BrokerId"}));
  EXPECT_EQ(g.i("BrokerId"), 2);
  g.expect_reencodes_byte_identical();
}

TEST(Golden, ControlledShutdownResponseV1ListsRemainingPartitions) {
  Bytes b = response_header_v0(14);
  b.i16(0).i32(2).str("orders").i32(0).str("orders").i32(3);  // ErrorCode, RemainingPartitions

  Golden g(b);
  ASSERT_TRUE(g.decode_response(7, 1));
  g.expect_response("ControlledShutdown", 1, 14, 0);
  EXPECT_EQ(g.count("RemainingPartitions"), 2);
  EXPECT_EQ(g.i("RemainingPartitions[1].PartitionIndex"), 3);
  g.expect_reencodes_byte_identical();
}
