// Payloads inside payloads: consumer protocol metadata and assignments in
// JoinGroup/SyncGroup, and the request, response and principal an Envelope
// carries. Every message here is built by hand from the specs (specs/kafka/):
// the expected values are the ones written into the bytes.
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dissector/filter/filter.hpp"
#include "dissector/output/output.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/pcap_writer.hpp"
#include "tests/test_support.hpp"
#include "wire/wire.hpp"

using namespace kwire;
using nlohmann::json;

namespace {

const ProgramSet& ps() { return ProgramSet::release(); }

json body_json(const Frame& f) {
  TextBuffer s;
  write_json(s, ps(), f, FrameContext{});
  return json::parse(s.view()).at("body");
}

std::string tree_text(const Frame& f) {
  TextBuffer s;
  write_tree(s, ps(), f, 0);
  return s.str();
}

// A Frame holds views into its message: the messages tests decode from
// temporaries are kept here for the rest of the run.
const std::vector<uint8_t>& keep(std::vector<uint8_t> m) {
  static std::deque<std::vector<uint8_t>> kept;
  return kept.emplace_back(std::move(m));
}

std::vector<uint8_t> strip_size(const std::vector<uint8_t>& m) { return {m.begin() + 4, m.end()}; }

// ConsumerProtocolSubscription v1 (classic encodings, no tagged fields):
// version, Topics ["orders"], UserData null, OwnedPartitions [{orders, [0, 2]}].
std::vector<uint8_t> subscription_v1() {
  test::Bytes b;
  b.i16(1).i32(1).str("orders").i32(-1).i32(1).str("orders").i32(2).i32(0).i32(2);
  return b.bytes();
}

// ConsumerProtocolAssignment v0: AssignedPartitions [{orders, [1]}], UserData "ud".
std::vector<uint8_t> assignment_v0() {
  test::Bytes b;
  b.i16(0).i32(1).str("orders").i32(1).i32(1).i32(2).raw("ud");
  return b.bytes();
}

// JoinGroup v5 request (header v1, classic encodings) with one protocol.
std::vector<uint8_t> join_group_v5(const std::string& protocol_type, const std::vector<uint8_t>& metadata) {
  test::Bytes b;
  b.i16(11).i16(5).i32(3).str("consumer-1");                   // header v1
  b.str("g").i32(45000).i32(300000).str("").i16(-1);           // GroupId, timeouts, MemberId, GroupInstanceId null
  b.str(protocol_type).i32(1).str("range").i32(static_cast<int64_t>(metadata.size())).raw(metadata);
  return b.message();
}

// JoinGroup v5 response (header v0): one member whose metadata is `metadata`.
std::vector<uint8_t> join_group_response_v5(const std::vector<uint8_t>& metadata) {
  test::Bytes b;
  b.i32(3);                                                    // header v0
  b.i32(0).i16(0).i32(1).str("range").str("m-1").str("m-1");   // Throttle, Error, GenerationId, ProtocolName, Leader, MemberId
  b.i32(1).str("m-1").i16(-1).i32(static_cast<int64_t>(metadata.size())).raw(metadata);
  return b.message();
}

}  // namespace

TEST(Nested, ConsumerSubscriptionInAJoinGroupRequestDecodesInPlace) {
  FrameDecoder d(ps());
  Frame f;
  auto msg = join_group_v5("consumer", subscription_v1());
  d.decode_request(msg, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  json j = body_json(f);
  EXPECT_EQ(j["protocols"][0]["metadata"],
            json::parse(R"({"version":1,"topics":["orders"],"userData":null,
                            "ownedPartitions":[{"topic":"orders","partitions":[0,2]}]})"));
  EXPECT_EQ(j["protocols"][0]["name"], "range");
  // The bytes are still the field's value, and the nested nodes sit at their
  // place in the outer message: Topics' int32 count comes right after the
  // bytes' int32 length and the 2-byte version.
  const Node* meta = test::at(f, ps(), "Protocols[0].Metadata");
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->aux, subscription_v1().size());
  EXPECT_TRUE(meta->flags & kNested);
  const Node& sub = f.nodes[static_cast<size_t>(meta - f.nodes.data()) + 1];
  EXPECT_EQ(ps().field(sub.desc).name, "ConsumerProtocolSubscription");
  const Node* topics = find_field(f, ps(), static_cast<uint32_t>(&sub - f.nodes.data()), "Topics");
  ASSERT_NE(topics, nullptr);
  EXPECT_EQ(topics->offset, meta->offset + 4 + 2);
  EXPECT_EQ(msg[topics->offset + 3], 1);  // count 1
  // The -V tree shows the subscription below the bytes field.
  std::string tree = tree_text(f);
  EXPECT_NE(tree.find("ConsumerProtocolSubscription\n"), std::string::npos) << tree;
  EXPECT_NE(tree.find("Topics: [\"orders\"]"), std::string::npos) << tree;
  // The summary line is the outer message's: the same as when the payload stays bytes.
  Frame other;
  d.decode_request(keep(join_group_v5("connect", subscription_v1())), other);
  EXPECT_EQ(summarize(ps(), f, nullptr), summarize(ps(), other, nullptr));
}

TEST(Nested, ReEncodingWritesTheBytesAsTheyCameWhateverTheNestedNodesSay) {
  FrameDecoder d(ps());
  FrameEncoder e(ps());
  Frame f;
  auto msg = join_group_v5("consumer", subscription_v1());
  d.decode_request(msg, f);
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> out;
  std::string error;
  ASSERT_TRUE(e.encode(f, out, error)) << error;
  EXPECT_EQ(out, msg);
  // An edit inside the nested payload is not a wire edit: the bytes field is written verbatim.
  for (auto& n : f.nodes)
    if (n.desc == kDescNestedVersion) n.v.i = 3;
  out.clear();
  ASSERT_TRUE(e.encode(f, out, error)) << error;
  EXPECT_EQ(out, msg);
}

TEST(Nested, OtherProtocolTypesKeepTheirBytes) {
  FrameDecoder d(ps());
  Frame f;
  d.decode_request(keep(join_group_v5("connect", subscription_v1())), f);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(body_json(f)["protocols"][0]["metadata"], wire::base64(subscription_v1()));
  const Node* meta = test::at(f, ps(), "Protocols[0].Metadata");
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->flags & kNested, 0);
  EXPECT_EQ(meta->end, static_cast<uint32_t>(meta - f.nodes.data()) + 1);  // no children
}

TEST(Nested, ReplayDecodesWithoutLookingInside) {
  FrameDecoder d(ps());
  d.set_nested(false);
  Frame f;
  d.decode_request(keep(join_group_v5("consumer", subscription_v1())), f);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(body_json(f)["protocols"][0]["metadata"], wire::base64(subscription_v1()));
}

TEST(Nested, TruncatedSubscriptionIsAnErrorAtItsOffsetAndTheRestOfTheMessageDecodes) {
  // JoinGroup v9 (flexible, header v2): Reason comes after the protocols.
  test::Bytes meta;
  meta.i16(0).i32(1).i16(6).raw("ord");  // v0: Topics [one string of 6 bytes], only 3 present
  test::Bytes b = test::request_header_v2(11, 9, 4);
  b.cstr("g").i32(45000).i32(300000).cstr("").cnull().cstr("consumer");
  b.carr(1).cstr("range").cbytes(meta.bytes()).tags0();
  b.cstr("rejoining").tags0();
  auto msg = b.message();
  FrameDecoder d(ps());
  Frame f;
  d.decode_request(msg, f);
  ASSERT_EQ(f.errors.size(), 1u);
  const Node* m = test::at(f, ps(), "Protocols[0].Metadata");
  ASSERT_NE(m, nullptr);
  // The string's length prefix: after the bytes' 1-byte compact length, the version and the array count.
  EXPECT_EQ(f.errors[0].offset, m->offset + 1 + 2 + 4);
  EXPECT_NE(f.errors[0].reason.find("Metadata (ConsumerProtocolSubscription): Topics"), std::string::npos)
      << f.errors[0].reason;
  EXPECT_TRUE(m->flags & kNestedFailed);
  json j = body_json(f);
  EXPECT_EQ(j["protocols"][0]["metadata"], wire::base64(meta.bytes()));  // raw bytes stay visible
  EXPECT_EQ(j["reason"], "rejoining");                                    // the outer message decoded on
  // What was decoded of the payload is kept: its version.
  EXPECT_NE(tree_text(f).find("Version: 0"), std::string::npos);
}

TEST(Nested, AnEmptyOrNegativeVersionIsAnError) {
  FrameDecoder d(ps());
  Frame f;
  d.decode_request(keep(join_group_v5("consumer", {})), f);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("needs a 2-byte version, 0 present"), std::string::npos) << f.errors[0].reason;
  test::Bytes neg;
  neg.i16(-1).i32(0).i32(-1);
  d.decode_request(keep(join_group_v5("consumer", neg.bytes())), f);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("unknown version -1"), std::string::npos) << f.errors[0].reason;
}

TEST(Nested, ANewerSubscriptionVersionIsReadAsTheNewestKnownAndTheRestKept) {
  // Version 9, unknown to Kafka 4.4: Kafka's ConsumerProtocol reads it with
  // the v3 layout and ignores what follows. v3: Topics, UserData,
  // OwnedPartitions, GenerationId, RackId; then 3 bytes of a future field.
  test::Bytes meta;
  meta.i16(9).i32(1).str("t").i32(0).i32(0).i32(7).str("rack-a").raw("xyz");
  FrameDecoder d(ps());
  Frame f;
  d.decode_request(keep(join_group_v5("consumer", meta.bytes())), f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  EXPECT_EQ(body_json(f)["protocols"][0]["metadata"],
            json::parse(R"({"version":9,"topics":["t"],"userData":"","ownedPartitions":[],"generationId":7,
                            "rackId":"rack-a","_trailingBytes":"eHl6"})"));
}

TEST(Nested, JoinGroupResponseWithoutProtocolTypeTakesItFromTheRequest) {
  FrameDecoder d(ps());
  Frame req, resp;
  d.decode_request(keep(join_group_v5("consumer", subscription_v1())), req);
  ResponseHint hint = response_hint(ps(), req);
  EXPECT_TRUE(hint.consumer_protocol);
  auto msg = join_group_response_v5(subscription_v1());
  d.decode_response(msg, 11, 5, resp, false, hint);
  ASSERT_TRUE(resp.ok()) << resp.errors.front().reason;
  EXPECT_EQ(body_json(resp)["members"][0]["metadata"]["topics"], json::array({"orders"}));
  // Without the request (or with another protocol type) it stays bytes.
  d.decode_response(msg, 11, 5, resp);
  EXPECT_EQ(body_json(resp)["members"][0]["metadata"], wire::base64(subscription_v1()));
  d.decode_request(keep(join_group_v5("connect", subscription_v1())), req);
  d.decode_response(msg, 11, 5, resp, false, response_hint(ps(), req));
  EXPECT_EQ(body_json(resp)["members"][0]["metadata"], wire::base64(subscription_v1()));
}

TEST(Nested, SyncGroupV5AssignmentsDecodeFromTheirOwnProtocolType) {
  auto a = assignment_v0();
  test::Bytes b = test::request_header_v2(14, 5, 9);
  b.cstr("g").i32(1).cstr("m-1").cnull().cstr("consumer").cstr("range");
  b.carr(1).cstr("m-1").cbytes(a).tags0().tags0();
  FrameDecoder d(ps());
  Frame f;
  d.decode_request(keep(b.message()), f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  const json expected = json::parse(
      R"({"version":0,"assignedPartitions":[{"topic":"orders","partitions":[1]}],"userData":"dWQ="})");
  EXPECT_EQ(body_json(f)["assignments"][0]["assignment"], expected);

  test::Bytes r;
  r.i32(9).tags0();
  r.i32(0).i16(0).cstr("consumer").cstr("range").cbytes(a).tags0();
  d.decode_response(keep(r.message()), 14, 5, f);  // ProtocolType is in the response itself
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  EXPECT_EQ(body_json(f)["assignment"], expected);
}

// A failed SyncGroup's response carries an empty assignment (the group
// coordinator's default; clients read the assignment only on success): no
// payload, not a malformed one. An empty subscription in a JoinGroup request
// stays an error (AnEmptyOrNegativeVersionIsAnError).
TEST(Nested, AFailedSyncGroupsEmptyAssignmentIsNoPayload) {
  test::Bytes r;
  r.i32(9).tags0();
  r.i32(0).i16(27).cstr("consumer").cnull().cbytes({}).tags0();  // REBALANCE_IN_PROGRESS, ProtocolName null
  FrameDecoder d(ps());
  Frame f;
  d.decode_response(keep(r.message()), 14, 5, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  EXPECT_EQ(body_json(f)["assignment"], "");
  EXPECT_EQ(body_json(f)["errorCode"], 27);
}

namespace {

// DefaultPrincipalData v0 (flexible): Type, Name, TokenAuthenticated.
std::vector<uint8_t> principal_v0() {
  test::Bytes b;
  b.i16(0).cstr("User").cstr("alice").i8(0).tags0();
  return b.bytes();
}

// Envelope v0 request (flexible, header v2) carrying `inner` (no size prefix).
std::vector<uint8_t> envelope(const std::vector<uint8_t>& inner) {
  test::Bytes b = test::request_header_v2(58, 0, 21, "broker-1");
  b.cbytes(inner).cbytes(principal_v0()).cbytes(std::vector<uint8_t>{127, 0, 0, 1}).tags0();
  return b.message();
}

}  // namespace

TEST(Nested, EnvelopeCarriesARequestAPrincipalAndItsResponse) {
  auto inner = strip_size(test::heartbeat_request(5, "m-7", 4));
  FrameDecoder d(ps());
  FrameEncoder e(ps());
  Frame f;
  auto msg = envelope(inner);
  d.decode_request(msg, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  json j = body_json(f);
  EXPECT_EQ(j["requestData"]["header"],
            json::parse(R"({"requestApiKey":88,"requestApiVersion":1,"correlationId":5,"clientId":"kwire-test"})"));
  EXPECT_EQ(j["requestData"]["body"]["groupId"], "orders-app");
  EXPECT_EQ(j["requestData"]["body"]["memberId"], "m-7");
  EXPECT_EQ(j["requestData"]["body"]["memberEpoch"], 4);
  EXPECT_EQ(j["requestPrincipal"],
            json::parse(R"({"version":0,"type":"User","name":"alice","tokenAuthenticated":false})"));
  EXPECT_EQ(j["clientHostAddress"], "fwAAAQ==");
  // The Envelope's summary is its own, not the enveloped request's.
  EXPECT_EQ(summarize(ps(), f, nullptr).find("orders-app"), std::string::npos) << summarize(ps(), f, nullptr);
  std::vector<uint8_t> out;
  std::string error;
  ASSERT_TRUE(e.encode(f, out, error)) << error;
  EXPECT_EQ(out, msg);

  ResponseHint hint = response_hint(ps(), f);
  EXPECT_EQ(hint.inner_api_key, 88);
  EXPECT_EQ(hint.inner_api_version, 1);
  test::Bytes r;
  r.i32(21).tags0().cbytes(strip_size(test::heartbeat_response(5, "m-7", 5, 25))).i16(0).tags0();
  d.decode_response(keep(r.message()), 58, 0, f, false, hint);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  j = body_json(f);
  EXPECT_EQ(j["responseData"]["header"], json::parse(R"({"correlationId":5})"));
  EXPECT_EQ(j["responseData"]["body"]["errorCode"], 25);
  EXPECT_EQ(j["responseData"]["body"]["memberEpoch"], 5);
  EXPECT_EQ(j["errorCode"], 0);
  // The enveloped error is not the Envelope's.
  EXPECT_FALSE(has_error_code(ps(), f));
  std::string tree = tree_text(f);
  EXPECT_NE(tree.find("ResponseHeader\n"), std::string::npos) << tree;
  EXPECT_NE(tree.find("StreamsGroupHeartbeatResponse\n"), std::string::npos) << tree;
  // Without its request the response data stays bytes.
  d.decode_response(keep(r.message()), 58, 0, f);
  EXPECT_TRUE(body_json(f)["responseData"].is_string());
}

TEST(Nested, ABrokenEnvelopedRequestIsAnErrorAndTheEnvelopeDecodesOn) {
  auto inner = strip_size(test::heartbeat_request(5, "m-7", 4));
  inner.resize(inner.size() - 3);
  FrameDecoder d(ps());
  Frame f;
  auto msg = envelope(inner);
  d.decode_request(msg, f);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].reason.rfind("RequestData: ", 0), 0u) << f.errors[0].reason;
  EXPECT_LT(f.errors[0].offset, msg.size());
  EXPECT_GT(f.errors[0].offset, 4u + 2 + 2 + 4 + 2 + 8 + 1);  // inside RequestData, past the outer header
  json j = body_json(f);
  EXPECT_TRUE(j["requestData"].is_string());
  EXPECT_EQ(j["clientHostAddress"], "fwAAAQ==");
  EXPECT_EQ(j["requestPrincipal"]["name"], "alice");
  // An unknown api inside: the header decodes, then the error says so.
  test::Bytes unknown;
  unknown.i16(999).i16(0).i32(1).str("x");
  d.decode_request(keep(envelope(unknown.bytes())), f);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("RequestData: no spec for api key 999 v0 request"), std::string::npos)
      << f.errors[0].reason;
}

namespace {

class JsonLines : public FrameHandler {
 public:
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    TextBuffer s;
    write_json(s, ProgramSet::release(), f, ctx);
    frames.push_back(json::parse(s.view()));
  }
  void on_skip(const FrameContext&, uint64_t, const std::string&) override {}
  void on_capture_error(const PacketMeta&, const std::string&, const std::string&) override {}
  std::vector<json> frames;
};

// The messages of a capture file as `kwire decode -T json` gives them
// (sessions, so responses have their requests).
std::vector<json> session_frames(const std::string& path) {
  JsonLines out;
  KafkaSessions sessions(ps(), {}, out);
  CaptureStats stats;
  std::string error;
  EXPECT_TRUE(read_capture_file(path, {}, sessions, stats, error)) << error;
  return out.frames;
}

// A capture file of its own for a test, removed when done.
struct TempCapture {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("kwire-nested-" + std::to_string(::getpid()) + ".pcap")).string();
  ~TempCapture() { std::filesystem::remove(path); }
};

}  // namespace

TEST(Nested, SessionsGiveAResponseItsRequestsProtocolType) {
  TempCapture file;
  {
    SyntheticCapture cap(file.path);
    uint32_t c = cap.connect(make_endpoint("10.1.1.1", 40000), make_endpoint("10.1.1.2", 9092));
    cap.send(c, StreamSide::FromClient, join_group_v5("consumer", subscription_v1()));
    cap.send(c, StreamSide::FromServer, join_group_response_v5(subscription_v1()));
    cap.close(c);
  }
  const auto frames = session_frames(file.path);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1]["body"]["members"][0]["metadata"]["ownedPartitions"][0]["partitions"], json::array({0, 2}));
}

// SyncGroup v3 (classic header v1, request and response): GroupId "g",
// GenerationId 1, MemberId "m-1", GroupInstanceId null, one assignment.
std::vector<uint8_t> sync_group_v3(const std::string& group, const std::vector<uint8_t>& assignment) {
  test::Bytes b;
  b.i16(14).i16(3).i32(4).str("consumer-1");                   // header v1
  b.str(group).i32(1).str("m-1").i16(-1);
  b.i32(1).str("m-1").i32(static_cast<int64_t>(assignment.size())).raw(assignment);
  return b.message();
}
std::vector<uint8_t> sync_group_response_v3(const std::vector<uint8_t>& assignment) {
  test::Bytes b;
  b.i32(4);                                                    // header v0
  b.i32(0).i16(0).i32(static_cast<int64_t>(assignment.size())).raw(assignment);  // Throttle, Error, Assignment
  return b.message();
}

// SyncGroup before v5 names no protocol type; the session takes it from the
// group's JoinGroup request (here on another connection), for the request's
// assignments and the response's.
TEST(Nested, OldSyncGroupsLearnTheirGroupsProtocolTypeFromJoinGroup) {
  TempCapture file;
  {
    SyntheticCapture cap(file.path);
    uint32_t c1 = cap.connect(make_endpoint("10.1.1.1", 40000), make_endpoint("10.1.1.2", 9092));
    cap.send(c1, StreamSide::FromClient, join_group_v5("consumer", subscription_v1()));
    uint32_t c2 = cap.connect(make_endpoint("10.1.1.1", 40001), make_endpoint("10.1.1.2", 9092));
    cap.send(c2, StreamSide::FromClient, sync_group_v3("g", assignment_v0()));
    cap.send(c2, StreamSide::FromServer, sync_group_response_v3(assignment_v0()));
    // A group no JoinGroup was seen for keeps its bytes.
    cap.send(c2, StreamSide::FromClient, sync_group_v3("other", assignment_v0()));
    cap.close(c1);
    cap.close(c2);
  }
  const auto frames = session_frames(file.path);
  ASSERT_EQ(frames.size(), 4u);
  const json assigned = json::parse(R"({"version":0,"assignedPartitions":[{"topic":"orders","partitions":[1]}],"userData":"dWQ="})");
  EXPECT_EQ(frames[1]["body"]["assignments"][0]["assignment"], assigned) << frames[1].dump();
  EXPECT_EQ(frames[2]["body"]["assignment"], assigned) << frames[2].dump();
  EXPECT_EQ(frames[3]["body"]["assignments"][0]["assignment"], wire::base64(assignment_v0()));
}

// captures/MANIFEST.md, txn-consumer.pcapng: the capture holds the broker's
// connection to its controller, and step 1's CreateTopics of txn-in and
// txn-out (3 partitions each, retention.ms=-1) is forwarded to the controller
// in an Envelope. (The consumers there use the KIP-848 protocol,
// ConsumerGroupHeartbeat; classic-consumer.pcapng has JoinGroup and SyncGroup.)
TEST(Nested, TheRealCapturesEnvelopeCarriesTheForwardedCreateTopics) {
  std::vector<json> envelopes;
  for (const auto& m : session_frames(std::string(KWIRE_SOURCE_DIR) + "/captures/txn-consumer.pcapng"))
    if (m["apiKey"] == 58) envelopes.push_back(m);
  ASSERT_EQ(envelopes.size(), 2u);
  const json& req = envelopes[0];
  ASSERT_EQ(req["direction"], "request");
  EXPECT_FALSE(req.contains("error")) << req.dump();
  const json& inner = req["body"]["requestData"];
  EXPECT_EQ(inner["header"]["requestApiKey"], 19);  // CreateTopics
  ASSERT_EQ(inner["body"]["topics"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json& t = inner["body"]["topics"][i];
    EXPECT_EQ(t["name"], i == 0 ? "txn-in" : "txn-out");
    EXPECT_EQ(t["numPartitions"], 3);
    EXPECT_EQ(t["configs"], json::parse(R"([{"name":"retention.ms","value":"-1"}])"));
  }
  EXPECT_EQ(req["body"]["requestPrincipal"]["type"], "User");
  // The response, matched to it, carries the CreateTopics response to the enveloped request.
  const json& resp = envelopes[1];
  ASSERT_EQ(resp["direction"], "response");
  EXPECT_FALSE(resp.contains("error")) << resp.dump();
  const json& answer = resp["body"]["responseData"];
  EXPECT_EQ(answer["header"]["correlationId"], inner["header"]["correlationId"]);
  ASSERT_EQ(answer["body"]["topics"].size(), 2u);
  EXPECT_EQ(answer["body"]["topics"][0]["name"], "txn-in");
  EXPECT_EQ(answer["body"]["topics"][1]["name"], "txn-out");
  EXPECT_EQ(answer["body"]["topics"][0]["numPartitions"], 3);
}

// captures/MANIFEST.md, classic-consumer.pcapng: members a (client.rack
// rack-a) and b (rack-b) of group classic-app, CooperativeStickyAssignor, on
// the 4 partitions of classic-in. What the clients' rebalance listeners saw:
// a alone gets 0-3 (generation 1); b joins: a keeps 0-1 and b gets nothing
// (generation 2, b's SyncGroup fails with REBALANCE_IN_PROGRESS), then b gets
// 2-3 (generation 3); b leaves and a takes 0-3 back (generation 4). Each
// rejoin's subscription names the member's last generation and what it owned.
TEST(Nested, TheRealClassicConsumerGroupsSubscriptionsAndAssignments) {
  std::map<std::string, std::string> client_of;   // client endpoint and correlation id of a SyncGroup -> client id
  auto key = [](const json& m, const char* client_side) {
    return m[client_side].get<std::string>() + "/" + std::to_string(m["correlationId"].get<int>());
  };
  std::map<std::string, std::vector<json>> joins, syncs;
  for (const auto& m : session_frames(std::string(KWIRE_SOURCE_DIR) + "/captures/classic-consumer.pcapng")) {
    EXPECT_FALSE(m.contains("error")) << m.dump();
    if (m["apiKey"] == 11 && m["direction"] == "request") {
      ASSERT_EQ(m["body"]["protocolType"], "consumer");
      ASSERT_EQ(m["body"]["protocols"].size(), 1u);
      EXPECT_EQ(m["body"]["protocols"][0]["name"], "cooperative-sticky");
      joins[m["header"]["clientId"]].push_back(m["body"]["protocols"][0]["metadata"]);
    }
    if (m["apiKey"] == 14 && m["direction"] == "request") client_of[key(m, "src")] = m["header"]["clientId"];
    if (m["apiKey"] == 14 && m["direction"] == "response") syncs[client_of.at(key(m, "dst"))].push_back(m["body"]);
  }
  auto subscription = [](int generation, const char* rack, const char* owned) {
    json s = {{"version", 3}, {"topics", {"classic-in"}}, {"generationId", generation}, {"rackId", rack},
              {"ownedPartitions", json::parse(owned)}};
    return s;
  };
  auto check_joins = [&](const std::string& client, const std::vector<json>& want) {
    ASSERT_EQ(joins[client].size(), want.size()) << client;
    for (size_t i = 0; i < want.size(); ++i)
      for (const auto& [k, v] : want[i].items()) EXPECT_EQ(joins[client][i][k], v) << client << " JoinGroup " << i << " " << k;
  };
  // The first JoinGroup of each member is answered MEMBER_ID_REQUIRED and sent again.
  check_joins("kwire-classic-a", {subscription(-1, "rack-a", "[]"), subscription(-1, "rack-a", "[]"),
                                  subscription(1, "rack-a", R"([{"topic":"classic-in","partitions":[0,1,2,3]}])"),
                                  subscription(2, "rack-a", R"([{"topic":"classic-in","partitions":[0,1]}])"),
                                  subscription(3, "rack-a", R"([{"topic":"classic-in","partitions":[0,1]}])")});
  check_joins("kwire-classic-b", {subscription(-1, "rack-b", "[]"), subscription(-1, "rack-b", "[]"),
                                  subscription(2, "rack-b", "[]")});
  auto assigned = [](const std::vector<json>& bodies) {
    std::vector<json> out;
    for (const auto& b : bodies)
      out.push_back(b["errorCode"] == 0 ? b["assignment"]["assignedPartitions"] : json(b["errorCode"]));
    return out;
  };
  const json all = json::parse(R"([{"topic":"classic-in","partitions":[0,1,2,3]}])");
  const json low = json::parse(R"([{"topic":"classic-in","partitions":[0,1]}])");
  const json high = json::parse(R"([{"topic":"classic-in","partitions":[2,3]}])");
  EXPECT_EQ(assigned(syncs["kwire-classic-a"]), (std::vector<json>{all, low, low, all}));
  EXPECT_EQ(assigned(syncs["kwire-classic-b"]), (std::vector<json>{json(27), high}));
  ASSERT_EQ(syncs["kwire-classic-b"].size(), 2u);
  EXPECT_EQ(syncs["kwire-classic-b"][0]["assignment"], "");   // the failed one's: empty bytes, no payload

  // DescribeGroups of the Stable group at generation 3: each member's
  // subscription is the one of its last JoinGroup, its assignment generation 3's.
  std::vector<json> described;
  for (const auto& m : session_frames(std::string(KWIRE_SOURCE_DIR) + "/captures/classic-consumer.pcapng"))
    if (m["apiKey"] == 15 && m["direction"] == "response") described.push_back(m["body"]["groups"][0]);
  ASSERT_EQ(described.size(), 2u);
  EXPECT_EQ(described[0]["groupState"], "Stable");
  ASSERT_EQ(described[0]["members"].size(), 2u);
  for (const auto& member : described[0]["members"]) {
    const bool a = member["clientId"] == "kwire-classic-a";
    EXPECT_EQ(member["memberMetadata"], a ? joins["kwire-classic-a"][3] : joins["kwire-classic-b"][2]);
    EXPECT_EQ(member["memberAssignment"]["assignedPartitions"], a ? low : high);
  }
  EXPECT_EQ(described[1]["groupState"], "Empty");
}

// DescribeGroups v0 response: a consumer group whose member's metadata and
// assignment decode, a member described while the group rebalances (empty
// ones: no payload), and a group of another protocol type (bytes).
TEST(Nested, DescribeGroupsMembersDecodeByTheirGroupsProtocolType) {
  auto sub = subscription_v1();
  auto asg = assignment_v0();
  test::Bytes b;
  b.i32(5);                                                                   // header v0
  b.i32(3);                                                                   // Groups
  b.i16(0).str("g").str("Stable").str("consumer").str("range");             // ErrorCode, GroupId, State, ProtocolType, Data
  b.i32(1).str("m-1").str("c-1").str("/10.0.0.1");                          // Members: MemberId, ClientId, ClientHost
  b.i32(static_cast<int64_t>(sub.size())).raw(sub).i32(static_cast<int64_t>(asg.size())).raw(asg);
  b.i16(0).str("h").str("PreparingRebalance").str("consumer").str("");
  b.i32(1).str("m-2").str("c-2").str("/10.0.0.2").i32(0).i32(0);            // empty metadata and assignment
  b.i16(0).str("k").str("Stable").str("connect").str("sessioned");
  b.i32(1).str("m-3").str("c-3").str("/10.0.0.3").i32(2).raw("ab").i32(0);
  FrameDecoder d(ps());
  Frame f;
  d.decode_response(keep(b.message()), 15, 0, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  const json groups = body_json(f)["groups"];
  EXPECT_EQ(groups[0]["members"][0]["memberMetadata"],
            json::parse(R"({"version":1,"topics":["orders"],"userData":null,
                            "ownedPartitions":[{"topic":"orders","partitions":[0,2]}]})"));
  EXPECT_EQ(groups[0]["members"][0]["memberAssignment"],
            json::parse(R"({"version":0,"assignedPartitions":[{"topic":"orders","partitions":[1]}],"userData":"dWQ="})"));
  EXPECT_EQ(groups[1]["members"][0]["memberMetadata"], "");
  EXPECT_EQ(groups[1]["members"][0]["memberAssignment"], "");
  EXPECT_EQ(groups[2]["members"][0]["memberMetadata"], "YWI=");   // base64("ab")
}

// Display filters and -T fields reach into payloads by their JSON names, as
// -T json shows them. The expected values are the ones written into the
// hand-built subscription above.
TEST(Nested, FiltersAndFieldsReachIntoConsumerProtocolPayloads) {
  FrameDecoder d(ps());
  Frame consumer, connect;
  d.decode_request(keep(join_group_v5("consumer", subscription_v1())), consumer);
  d.decode_request(keep(join_group_v5("connect", subscription_v1())), connect);
  ASSERT_TRUE(consumer.ok() && connect.ok());
  auto matches = [&](const std::string& expr, const Frame& f) {
    filter::CompileError err;
    auto flt = filter::Filter::compile(expr, ps(), err);
    EXPECT_TRUE(flt) << err.format();
    return flt && flt->match(f, FrameContext{});
  };
  EXPECT_TRUE(matches("body.protocols.metadata.topics == \"orders\"", consumer));
  EXPECT_TRUE(matches("body.protocols.metadata.version == 1", consumer));
  EXPECT_TRUE(matches("body.protocols.metadata.ownedPartitions.partitions == 2", consumer));
  EXPECT_FALSE(matches("body.protocols.metadata.ownedPartitions.partitions == 1", consumer));
  EXPECT_TRUE(matches("body.protocols.metadata.userData == null", consumer));
  EXPECT_FALSE(matches("body.protocols.metadata.generationId", consumer));  // v2+ only
  // A connect group's metadata is not a consumer subscription: it stays bytes.
  EXPECT_FALSE(matches("body.protocols.metadata.topics == \"orders\"", connect));
  EXPECT_TRUE(matches("body.protocols.metadata", connect));

  filter::CompileError err;
  auto fx = filter::FieldExtractor::compile(
      {"body.protocols.metadata.version", "body.protocols.metadata.topics",
       "body.protocols.metadata.ownedPartitions.partitions", "body.protocols.metadata.ownedPartitions"},
      filter::FieldsFormat{}, ps(), err);
  ASSERT_TRUE(fx) << err.format();
  TextBuffer line;
  fx->append_line(line, consumer, FrameContext{});
  EXPECT_EQ(line.str(), "1\torders\t0,2\t{\"topic\":\"orders\",\"partitions\":[0,2]}\n");

  // A wrong path below a payload names the payload's paths.
  ASSERT_FALSE(filter::Filter::compile("apiKey == 11 && body.protocols.metadata.topic", ps(), err));
  EXPECT_NE(err.message.find("unknown path 'body.protocols.metadata.topic'"), std::string::npos) << err.message;
  EXPECT_NE(err.hint.find("  body.protocols.metadata.ownedPartitions.partitions\n"), std::string::npos) << err.hint;
  EXPECT_NE(err.hint.find("\n  body.members.metadata.rackId"), std::string::npos) << err.hint;
}

// The Envelope of txn-consumer.pcapng forwards the CreateTopics of the
// scenario (topics txn-in and txn-out): filters and fields see inside it.
TEST(Nested, FiltersAndFieldsReachIntoTheEnvelopeOfTheRealCapture) {
  const std::string cap = std::string(KWIRE_SOURCE_DIR) + "/captures/txn-consumer.pcapng";
  auto r = test::kwire_cmd("decode -r " + cap +
                           " -Y 'body.requestData.body.topics.name == \"txn-out\"' -T fields -e apiName"
                           " -e body.requestData.header.requestApiKey -e body.requestData.body.topics.name"
                           " -e body.requestPrincipal.type");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "Envelope\t19\ttxn-in,txn-out\tUser\n");
  // The response's enveloped CreateTopics response, by its own fields.
  r = test::kwire_cmd("decode -r " + cap +
                      " -Y 'body.responseData.body.topics.numPartitions == 3' -T fields -e direction"
                      " -e body.responseData.body.topics.name");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "response\ttxn-in,txn-out\n");
  // "header" and "body" are the enveloped message's parts; nothing else is.
  r = test::kwire_cmd("decode -r " + cap + " -Y 'apiKey == 58 && body.requestData.topics'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("unknown path 'body.requestData.topics'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  body.requestData.header.clientId\n"), std::string::npos) << r.err;
}

// `kwire specs` names the payloads and the versions of their data specs
// (specs/kafka/*.json: "validVersions" 0-3, 0-3 and 0).
TEST(Nested, SpecsListsThePayloads) {
  auto r = test::kwire_cmd("specs");
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t from = r.out.find("Payloads decoded inside bytes fields:\n");
  ASSERT_NE(from, std::string::npos) << r.out;
  // Rows "  WHERE  WHAT", the WHAT column aligned on every row.
  std::map<std::string, std::string> rows;
  std::set<size_t> column;
  std::istringstream in(r.out.substr(from));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !line.empty()) {
    const size_t gap = line.find("  ", 2);
    ASSERT_NE(gap, std::string::npos) << line;
    const size_t what = line.find_first_not_of(' ', gap);
    column.insert(what);
    rows[line.substr(2, gap - 2)] = line.substr(what);
  }
  EXPECT_EQ(column.size(), 1u) << r.out;
  EXPECT_EQ(rows.size(), 9u) << r.out;
  EXPECT_EQ(rows["JoinGroup request Protocols[].Metadata"],
            "ConsumerProtocolSubscription v0-3, when the protocol type is consumer");
  EXPECT_EQ(rows["SyncGroup response Assignment"], "ConsumerProtocolAssignment v0-3, when the protocol type is consumer");
  EXPECT_EQ(rows["DescribeGroups response Groups[].Members[].MemberAssignment"],
            "ConsumerProtocolAssignment v0-3, when the protocol type is consumer");
  EXPECT_EQ(rows["Envelope request RequestPrincipal"], "DefaultPrincipalData v0");
  EXPECT_EQ(rows["Envelope response ResponseData"], "a whole response (header, body)");
}

// The example in docs/decode.md (`kwire decode`): a JoinGroup v5 of a cooperative-sticky
// consumer with a v3 subscription, built here field by field.
TEST(Nested, TheReadmeExample) {
  test::Bytes sub;
  sub.i16(3).i32(2).str("orders").str("payments").i32(-1)        // Topics, UserData null
      .i32(1).str("orders").i32(2).i32(0).i32(2)                 // OwnedPartitions
      .i32(7).str("rack-a");                                     // GenerationId, RackId
  test::Bytes b;
  b.i16(11).i16(5).i32(3).str("billing-consumer-1");
  b.str("billing").i32(45000).i32(300000).str("").i16(-1).str("consumer");
  b.i32(1).str("cooperative-sticky").i32(static_cast<int64_t>(sub.size())).raw(sub.bytes());
  FrameDecoder d(ps());
  Frame f;
  d.decode_request(keep(b.message()), f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  EXPECT_EQ(body_json(f)["protocols"][0]["metadata"],
            json::parse(R"({"version":3,"topics":["orders","payments"],"userData":null,
                            "ownedPartitions":[{"topic":"orders","partitions":[0,2]}],"generationId":7,"rackId":"rack-a"})"));
  EXPECT_NE(tree_text(f).find("      Metadata: 64 bytes\n"
                              "        ConsumerProtocolSubscription\n"
                              "          Version: 3\n"
                              "          Topics: [\"orders\", \"payments\"]\n"),
            std::string::npos)
      << tree_text(f);
}
