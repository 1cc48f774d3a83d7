// kwire replay's parts that need no broker: path patterns, the comparison of
// a live response with a recorded one, and the substitution of values the
// broker hands out. Messages are built byte by byte from the specs (test_support).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/records.hpp"
#include "recorder/pcap_writer.hpp"
#include "replay/compare.hpp"
#include "replay/recording.hpp"
#include "replay/report.hpp"
#include "replay/state.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

using test::Bytes;

const ProgramSet& ps() { return ProgramSet::release(); }

std::vector<std::string_view> segs(std::initializer_list<std::string_view> s) { return s; }

TEST(ReplayPattern, SegmentsWildcardsApiAndSubtrees) {
  replay::PathPattern p;
  std::string error;
  ASSERT_TRUE(replay::parse_pattern("**.throttleTimeMs", p, error)) << error;
  EXPECT_TRUE(p.matches("Fetch", segs({"body", "throttleTimeMs"})));
  EXPECT_TRUE(p.matches("Fetch", segs({"body", "responses", "throttleTimeMs"})));
  EXPECT_FALSE(p.matches("Fetch", segs({"body", "throttleTimeMsX"})));
  ASSERT_TRUE(replay::parse_pattern("Fetch:body.responses.partitions.records", p, error));
  EXPECT_EQ(p.api, "Fetch");
  EXPECT_TRUE(p.matches("Fetch", segs({"body", "responses", "partitions", "records", "baseOffset"})));  // subtree
  EXPECT_FALSE(p.matches("Produce", segs({"body", "responses", "partitions", "records"})));
  EXPECT_FALSE(p.matches("Fetch", segs({"body", "responses", "partitions"})));
  ASSERT_TRUE(replay::parse_pattern("**.*Timestamp", p, error));
  EXPECT_FALSE(p.matches("ListOffsets", segs({"body", "topics", "partitions", "timestamp"})));
  EXPECT_TRUE(p.matches("X", segs({"body", "maxTimestamp"})));
  ASSERT_TRUE(replay::parse_pattern("body.results[0].errorCode", p, error));  // indices do not take part
  EXPECT_TRUE(p.matches("X", segs({"body", "results", "errorCode"})));
  EXPECT_FALSE(replay::parse_pattern("body..x", p, error));
  EXPECT_NE(error.find("column 6"), std::string::npos) << error;
  EXPECT_FALSE(replay::parse_pattern("body.a[0", p, error));
}

// ProduceResponse v11 (flexible): one topic by name, the given partitions.
std::vector<uint8_t> produce_response(const std::vector<std::pair<int, int64_t>>& partitions, int error = 0) {
  Bytes b;
  b.i32(7).tags0();                            // correlation id, header tags
  b.carr(1).cstr("orders").carr(partitions.size());
  for (auto [index, base] : partitions)
    b.i32(index).i16(error).i64(base).i64(-1).i64(0)  // Index, ErrorCode, BaseOffset, LogAppendTimeMs, LogStartOffset
        .carr(0).cnull().tags0();                      // RecordErrors, ErrorMessage
  b.tags0();                                   // topic tags
  b.i32(0).tags0();                            // ThrottleTimeMs, body tags
  return b.message();
}

std::vector<replay::Difference> diff(const std::vector<uint8_t>& rec, const std::vector<uint8_t>& live, int api,
                                     int version, const replay::CompareOptions& o = {}) {
  FrameDecoder d(ps());
  Frame a, b;  // rec and live outlive them
  d.decode_response(rec, static_cast<int16_t>(api), static_cast<int16_t>(version), a);
  d.decode_response(live, static_cast<int16_t>(api), static_cast<int16_t>(version), b);
  EXPECT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.errors.front().reason : a.errors.front().reason);
  std::vector<replay::Difference> out;
  replay::compare(ps(), a, b, o, out);
  return out;
}

TEST(ReplayCompare, EqualAnswersHaveNoDifferences) {
  EXPECT_TRUE(diff(produce_response({{0, 5}, {1, 9}}), produce_response({{0, 5}, {1, 9}}), 0, 11).empty());
}

TEST(ReplayCompare, ArrayOrderIsNotADifference) {
  EXPECT_TRUE(diff(produce_response({{0, 5}, {1, 9}}), produce_response({{1, 9}, {0, 5}}), 0, 11).empty());
}

TEST(ReplayCompare, ElementsPairByIdentityAndPathsUseJsonNames) {
  auto d = diff(produce_response({{0, 5}, {1, 9}}), produce_response({{1, 9}, {0, 6}}), 0, 11);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "body.responses[0].partitionResponses[0].baseOffset");
  EXPECT_EQ(d[0].recorded, "5");
  EXPECT_EQ(d[0].replayed, "6");
  EXPECT_FALSE(d[0].ignored);
}

TEST(ReplayCompare, ErrorCodesAndMissingElements) {
  auto d = diff(produce_response({{0, 5}}), produce_response({{0, 5}, {2, 0}}, 0), 0, 11);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "body.responses[0].partitionResponses[+1]");
  EXPECT_EQ(d[0].recorded, "\"(absent)\"");
  d = diff(produce_response({{0, 5}}), produce_response({{0, 5}}, 6), 0, 11);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "body.responses[0].partitionResponses[0].errorCode");
  EXPECT_EQ(d[0].replayed, "6");
}

TEST(ReplayCompare, IgnoreRulesFlagButKeepDifferences) {
  replay::CompareOptions o;
  o.ignore = replay::default_ignore_rules();
  std::string error;
  replay::IgnoreRule r;
  ASSERT_TRUE(replay::parse_pattern("Produce:body.responses.partitionResponses.baseOffset", r.pattern, error));
  o.ignore.push_back(r);
  auto d = diff(produce_response({{0, 5}}), produce_response({{0, 6}}), 0, 11, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].ignored);
  EXPECT_EQ(d[0].rule, "Produce:body.responses.partitionResponses.baseOffset");
}

TEST(ReplayCompare, ExpectationsOnLiveValuesAndErrorNames) {
  replay::CompareOptions o;
  replay::ExpectRule e;
  std::string error;
  ASSERT_TRUE(replay::parse_pattern("Produce:body.responses[0].partitionResponses[0].errorCode", e.pattern, error));
  e.path = "body.responses[0].partitionResponses[0].errorCode";
  e.value = "NOT_LEADER_OR_FOLLOWER";  // 6
  o.expect.push_back(e);
  EXPECT_TRUE(diff(produce_response({{0, 5}}, 6), produce_response({{0, 5}}, 6), 0, 11, o).empty());
  auto d = diff(produce_response({{0, 5}}), produce_response({{0, 5}}), 0, 11, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].replayed, "0");
  EXPECT_EQ(d[0].recorded, "\"NOT_LEADER_OR_FOLLOWER\"");
}

TEST(ReplayState, MemberEpochsAreLearnedPerMemberAndWrittenIntoLaterRequests) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  // Frames view the bytes they were decoded from: keep those alive.
  const auto req_b = test::heartbeat_request(1, "m-1", 0), rec_b = test::heartbeat_response(1, "m-1", 3),
             live_b = test::heartbeat_response(1, "m-1", 5), next_b = test::heartbeat_request(2, "m-1", 3),
             other_b = test::heartbeat_request(3, "m-2", 3);
  Frame req, rec, live;
  d.decode_request(req_b, req);
  d.decode_response(rec_b, 88, 1, rec);
  d.decode_response(live_b, 88, 1, live);
  ASSERT_TRUE(req.ok() && rec.ok() && live.ok());
  st.learn(req, rec, live, 1);

  Frame next;
  d.decode_request(next_b, next);
  EXPECT_EQ(st.rewrite_request(next, 1), 1);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(next, bytes, error)) << error;
  EXPECT_EQ(bytes, test::heartbeat_request(2, "m-1", 5));

  // Another member's epoch 3 is its own.
  Frame other;
  d.decode_request(other_b, other);
  EXPECT_EQ(st.rewrite_request(other, 1), 0);

  // The recorded response, translated, compares equal to the live one.
  st.translate_response(rec, req, 1);
  std::vector<replay::Difference> out;
  replay::compare(ps(), rec, live, {}, out);
  EXPECT_TRUE(out.empty()) << out.front().path;
}

// InitProducerId v5 response (flexible): throttle, error, producer id, epoch.
std::vector<uint8_t> init_producer_id_response(int64_t pid, int epoch) {
  Bytes b;
  b.i32(4).tags0().i32(0).i16(0).i64(pid).i16(epoch).tags0();
  return b.message();
}
std::vector<uint8_t> init_producer_id_request() {
  Bytes b = test::request_header_v2(22, 5, 4);
  b.cstr("tx-1").i32(60000).i64(-1).i16(-1).tags0();
  return b.message();
}

std::vector<uint8_t> batch(int64_t pid, int16_t epoch) {
  BatchSpec s;
  s.producer_id = pid;
  s.producer_epoch = epoch;
  s.base_sequence = 0;
  s.transactional = true;
  s.base_timestamp = 1700000000000;
  s.records = {RecordSpec{0, "k1", "v1", {}}, RecordSpec{1, "k2", "v2", {}}};
  return encode_record_batch(s);
}

// ProduceRequest v13 (flexible; topics by id) carrying `records`.
std::vector<uint8_t> produce_request(const std::vector<uint8_t>& records, uint8_t topic_fill) {
  Bytes b = test::request_header_v2(0, 13, 9);
  b.cstr("tx-1").i16(-1).i32(30000).carr(1).uuid(topic_fill).carr(1).i32(0).cbytes(records).tags0().tags0().tags0();
  return b.message();
}

// Decodes a recorded request with its recorded and live answers (api, version)
// and lets `st` learn from them; the byte vectors must outlive the frames'
// use, which ends here.
void learn_from(replay::ReplayState& st, const std::vector<uint8_t>& req_b, const std::vector<uint8_t>& rec_b,
                const std::vector<uint8_t>& live_b, int16_t api, int16_t version) {
  FrameDecoder d(ps());
  Frame req, rec, live;
  d.decode_request(req_b, req);
  d.decode_response(rec_b, api, version, rec);
  d.decode_response(live_b, api, version, live);
  ASSERT_TRUE(req.ok() && rec.ok() && live.ok());
  st.learn(req, rec, live, 1);
}

TEST(ReplayState, ProducerIdsAreRewrittenInsideRecordBatchesWithANewCrc) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  const auto produce_b = produce_request(batch(1000, 0), 0x11);
  learn_from(st, init_producer_id_request(), init_producer_id_response(1000, 0), init_producer_id_response(4242, 3), 22, 5);

  Frame produce;
  d.decode_request(produce_b, produce);
  ASSERT_TRUE(produce.ok()) << produce.errors.front().reason;
  st.rewrite_request(produce, 2);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(produce, bytes, error)) << error;
  // Byte for byte what a producer with id 4242, epoch 3 sends (encoded by the records encoder).
  EXPECT_EQ(bytes, produce_request(batch(4242, 3), 0x11));
}

// A recorded ShareFetch answer (v2) whose records a producer wrote with the id
// the capture's broker gave it: compared as the target would send them, with
// the producer id and epoch it gave, and the CRC of those bytes.
TEST(ReplayState, ProducerIdsAreTranslatedInsideRecordedAnswersRecords) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  learn_from(st, init_producer_id_request(), init_producer_id_response(1000, 0), init_producer_id_response(4242, 3), 22, 5);
  auto share_fetch_answer = [](const std::vector<uint8_t>& records) {
    Bytes b;
    b.i32(7).tags0().i32(0).i16(0).cnull().i32(30000).carr(1).uuid(0x11).carr(1);
    b.i32(0).i16(0).cnull().i16(0).cnull().i32(-1).i32(-1).tags0().cbytes(records);
    b.carr(1).i64(0).i64(1).i16(1).tags0().tags0().tags0().carr(0).tags0();
    return b.message();
  };
  Bytes rq = test::request_header_v2(78, 2, 7);
  rq.cstr("g").cstr("m").i32(1).i32(500).i32(1).i32(1048576).i32(500).i32(500).i8(0).boolean(false).carr(0).carr(0).tags0();
  const auto request_b = rq.message();
  const auto recorded_b = share_fetch_answer(batch(1000, 0));
  Frame req, recorded, want;
  d.decode_request(request_b, req);
  d.decode_response(recorded_b, 78, 2, recorded);
  ASSERT_TRUE(req.ok()) << req.errors.front().reason;
  ASSERT_TRUE(recorded.ok()) << recorded.errors.front().reason;
  st.translate_response(recorded, req, 1);
  // What the records encoder writes for producer 4242, epoch 3.
  const auto want_b = share_fetch_answer(batch(4242, 3));
  d.decode_response(want_b, 78, 2, want);
  ASSERT_TRUE(want.ok());
  std::vector<replay::Difference> diffs;
  replay::compare(ps(), recorded, want, {}, diffs);
  EXPECT_TRUE(diffs.empty()) << diffs.front().path << ": " << diffs.front().recorded << " -> " << diffs.front().replayed;
}

// The recorded InitProducerId failed (COORDINATOR_LOAD_IN_PROGRESS: producer id -1,
// epoch -1) and the live one did not: -1 is no id, and a non-idempotent producer's
// batches (producer id -1, epoch -1) keep it.
TEST(ReplayState, MinusOneIsNoIdToLearn) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  Bytes failed;
  failed.i32(4).tags0().i32(0).i16(14).i64(-1).i16(-1).tags0();
  const auto produce_b = produce_request(batch(-1, -1), 0x11);
  learn_from(st, init_producer_id_request(), failed.message(), init_producer_id_response(4242, 0), 22, 5);
  Frame produce;
  d.decode_request(produce_b, produce);
  ASSERT_TRUE(produce.ok());
  EXPECT_EQ(st.rewrite_request(produce, 2), 0);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(produce, bytes, error)) << error;
  EXPECT_EQ(bytes, produce_b);
}

// MetadataResponse v12 of `brokers` brokers (ids 1..n) and one partition of
// "orders" led by `leader` with these replicas (all in sync).
std::vector<uint8_t> metadata_partition(int brokers, int32_t leader, const std::vector<int32_t>& replicas) {
  Bytes b;
  b.i32(3).tags0();
  b.i32(0).carr(brokers);
  for (int k = 1; k <= brokers; ++k) b.i32(k).cstr("127.0.0." + std::to_string(10 + k)).i32(9092).cnull().tags0();
  b.cstr("cluster-x").i32(1).carr(1).i16(0).cstr("orders").uuid(0x11).i8(0).carr(1);
  b.i16(0).i32(0).i32(leader).i32(0).carr(replicas.size());
  for (int32_t r : replicas) b.i32(r);
  b.carr(replicas.size());
  for (int32_t r : replicas) b.i32(r);
  b.carr(0).tags0();
  b.i32(-2147483648).tags0().tags0();
  return b.message();
}

// Metadata compared as structure: node ids are the target's, but how many
// replicas a partition has, and whether its leader is a broker of the target,
// are compared; what follows from another number of brokers is a shape
// difference, not a regression.
TEST(ReplayCompare, MetadataIsComparedAsStructureModuloShape) {
  FrameDecoder d(ps());
  auto run = [&](const std::vector<uint8_t>& rec_b, const std::vector<uint8_t>& live_b, int recorded, int target,
                 std::vector<int32_t> nodes) {
    Frame rec, live;
    d.decode_response(rec_b, 3, 12, rec);
    d.decode_response(live_b, 3, 12, live);
    EXPECT_TRUE(rec.ok() && live.ok());
    replay::CompareOptions o;
    o.ignore = replay::default_ignore_rules();
    o.recorded_brokers = recorded;
    o.target_brokers = target;
    o.target_nodes = std::move(nodes);
    std::vector<replay::Difference> out;
    replay::compare(ps(), rec, live, o, out);
    return out;
  };
  auto shape = [](const replay::Difference& x) { return x.ignored && x.rule.starts_with(replay::kShapeRule); };
  // 3 brokers recorded, 1 on the target: the broker list and the replicas are shape.
  // The leader's id (2 then, 1 now) is the target's, ignored.
  auto out = run(metadata_partition(3, 2, {2, 3, 1}), metadata_partition(1, 1, {1}), 3, 1, {1});
  ASSERT_EQ(out.size(), 4u);
  for (const auto& x : out)
    EXPECT_TRUE(x.path.ends_with("leaderId") ? x.ignored && x.rule == "**.leaderId" : shape(x)) << x.path << " " << x.rule;
  EXPECT_EQ(out[0].path, "body.brokers");
  EXPECT_EQ(out[0].recorded, "\"3 brokers\"");
  EXPECT_EQ(out[0].replayed, "\"1 broker\"");
  EXPECT_EQ(out[2].path, "body.topics[0].partitions[0].replicaNodes");
  EXPECT_EQ(out[2].recorded, "[2,3,1]");
  EXPECT_EQ(out[2].replayed, "[1]");
  // 3 and 3, other ids: nothing but ignored node ids.
  out = run(metadata_partition(3, 2, {2, 3, 1}), metadata_partition(3, 3, {3, 1, 2}), 3, 3, {1, 2, 3});
  for (const auto& x : out) EXPECT_TRUE(x.ignored && !shape(x)) << x.path;
  // 3 and 3, but one replica: a regression.
  out = run(metadata_partition(3, 2, {2, 3, 1}), metadata_partition(3, 2, {2}), 3, 3, {1, 2, 3});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].ignored);
  EXPECT_EQ(out[0].rule, "3 replicas recorded, 1 replayed");
  // A leader that is no broker of the target: a regression.
  out = run(metadata_partition(3, 2, {2, 3, 1}), metadata_partition(3, 7, {2, 3, 1}), 3, 3, {1, 2, 3});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "body.topics[0].partitions[0].leaderId");
  EXPECT_FALSE(out[0].ignored);
  EXPECT_EQ(out[0].rule, "leader 7 is none of the target's brokers");
  // 1 broker recorded, 3 on the target, a topic of the broker default: 1 replica then, 3 now.
  out = run(metadata_partition(1, 1, {1}), metadata_partition(3, 2, {2, 3, 1}), 1, 3, {1, 2, 3});
  ASSERT_EQ(out.size(), 4u);
  for (const auto& x : out) EXPECT_TRUE(x.path.ends_with("leaderId") ? x.ignored : shape(x)) << x.path;
}

// MetadataResponse v12: one topic with a name and an id, no brokers.
std::vector<uint8_t> metadata_response(const std::string& topic, uint8_t id_fill) {
  Bytes b;
  b.i32(3).tags0();
  b.i32(0).carr(0).cstr("cluster-x").i32(1)         // throttle, brokers, ClusterId, ControllerId
      .carr(1).i16(0).cstr(topic).uuid(id_fill).i8(0).carr(0).i32(-2147483648).tags0()
      .tags0();
  return b.message();
}

TEST(ReplayState, TopicIdsMapByNameAndRenamesApply) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {"", "t2-"});
  const auto rec_b = metadata_response("orders", 0x11), live_b = metadata_response("t2-orders", 0x77),
             produce_b = produce_request(batch(-1, -1), 0x11);
  Frame rec, live;
  d.decode_response(rec_b, 3, 12, rec);
  d.decode_response(live_b, 3, 12, live);
  ASSERT_TRUE(rec.ok() && live.ok()) << (rec.ok() ? live.errors.front().reason : rec.errors.front().reason);
  st.learn_topics(rec, false);
  st.learn_topics(live, true);
  Frame produce;
  d.decode_request(produce_b, produce);
  EXPECT_EQ(st.rewrite_request(produce, 1), 1);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(produce, bytes, error)) << error;
  EXPECT_EQ(bytes, produce_request(batch(-1, -1), 0x77));
}

TEST(ReplayState, GroupRenamesApplyToRequestsAndRecordedAnswers) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {"g2-", ""});
  const auto req_b = test::heartbeat_request(1, "m-1", 4);
  Frame req;
  d.decode_request(req_b, req);
  EXPECT_EQ(st.rewrite_request(req, 1), 1);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(req, bytes, error)) << error;
  // heartbeat_request writes GroupId "orders-app": the same request for group g2-orders-app.
  Bytes b = test::request_header_v2(88, 1, 1);
  b.cstr("g2-orders-app").cstr("m-1").i32(4).i32(0).cnull().cnull().i32(-1).i8(-1).cnull().cnull().cnull()
      .cnull().i8(-1).cnull().cnull().cnull().i8(0).tags0();
  EXPECT_EQ(bytes, b.message());
}

// FindCoordinator's keys have no entity type: a group key (KeyType 0) is renamed
// in the request and in the recorded answer, a transactional id is not.
TEST(ReplayState, GroupRenamesApplyToFindCoordinatorKeysOfGroups) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {"g2-", ""});
  auto find = [](int8_t type, const char* key) {
    Bytes b = test::request_header_v2(10, 4, 5);   // FindCoordinator v4: KeyType, CoordinatorKeys
    b.i8(type).carr(1).cstr(key).tags0();
    return b.message();
  };
  const auto group_b = find(0, "orders-app"), txn_b = find(1, "orders-app");
  Frame group, txn;
  d.decode_request(group_b, group);
  d.decode_request(txn_b, txn);
  ASSERT_TRUE(group.ok() && txn.ok());
  EXPECT_EQ(st.rewrite_request(group, 1), 1);
  EXPECT_EQ(st.rewrite_request(txn, 1), 0);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(group, bytes, error)) << error;
  const auto renamed = find(0, "g2-orders-app");
  EXPECT_EQ(bytes, renamed);
  // The answer v4: ThrottleTimeMs, Coordinators [Key, NodeId, Host, Port, ErrorCode, ErrorMessage].
  Bytes a;
  a.i32(5).tags0().i32(0).carr(1).cstr("orders-app").i32(1).cstr("127.0.0.1").i32(9092).i16(0).cnull().tags0().tags0();
  const auto answer_b = a.message();
  Frame answer, original;
  d.decode_request(group_b, original);
  d.decode_response(answer_b, 10, 4, answer);
  ASSERT_TRUE(answer.ok());
  st.translate_response(answer, original, 1);
  const Node* key = nullptr;
  for (uint32_t i = answer.body; i < answer.nodes.size(); ++i)
    if (ps().field(answer.nodes[i].desc).name == "Key") key = &answer.nodes[i];
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->str(), "g2-orders-app");
}

// KIP-848's subscription is a []string of topicName entities: --rename-topic
// renames each element (bytes worked out from ConsumerGroupHeartbeatRequest.json).
TEST(ReplayState, TopicRenamesApplyToStringArraysOfTopicNames) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {"", "t2-"});
  auto heartbeat = [](const char* group, std::vector<const char*> topics) {
    // v1: GroupId, MemberId, MemberEpoch, InstanceId, RackId, RebalanceTimeoutMs,
    // SubscribedTopicNames, SubscribedTopicRegex, ServerAssignor, TopicPartitions.
    Bytes b = test::request_header_v2(68, 1, 7);
    b.cstr(group).cstr("m-1").i32(0).cnull().cnull().i32(300000).carr(topics.size());
    for (const char* t : topics) b.cstr(t);
    b.cnull().cnull().carr(0).tags0();
    return b.message();
  };
  const auto recorded = heartbeat("g", {"orders", "pages"});
  Frame f;
  d.decode_request(recorded, f);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(st.rewrite_request(f, 1), 2);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(f, bytes, error)) << error;
  EXPECT_EQ(bytes, heartbeat("g", {"t2-orders", "t2-pages"}));
}

// ConsumerGroupHeartbeatResponse v1: an assignment of (topic id fill, partitions).
std::vector<uint8_t> cgh_response(const std::vector<std::pair<uint8_t, std::vector<int>>>& assignment) {
  Bytes b;
  b.i32(9).tags0();                                     // correlation id, header tags
  b.i32(0).i16(0).cnull().cstr("member-0001").i32(4).i32(5000).present().carr(assignment.size());
  for (const auto& [topic, partitions] : assignment) {
    b.uuid(topic).carr(partitions.size());
    for (int p : partitions) b.i32(p);
    b.tags0();
  }
  b.tags0().tags0();                                    // assignment tags, body tags
  return b.message();
}

std::vector<replay::Difference> diff_with_memory(const std::vector<uint8_t>& rec, const std::vector<uint8_t>& live,
                                                 int api, int version, replay::StickyMemory& memory) {
  FrameDecoder d(ps());
  Frame a, b;
  d.decode_response(rec, static_cast<int16_t>(api), static_cast<int16_t>(version), a);
  d.decode_response(live, static_cast<int16_t>(api), static_cast<int16_t>(version), b);
  EXPECT_TRUE(a.ok() && b.ok());
  std::vector<replay::Difference> out;
  replay::compare(ps(), a, b, {}, out, &memory, "1");
  return out;
}

TEST(ReplayCompare, AssignmentsAreSetsAtEveryLevel) {
  const auto rec = cgh_response({{0x11, {0, 1, 2}}, {0x22, {3}}});
  const auto shuffled = cgh_response({{0x22, {3}}, {0x11, {2, 0, 1}}});
  // As a plain field (partitions: a set of values; topicPartitions: structs paired by topic id).
  EXPECT_TRUE(diff(rec, shuffled, 68, 1).empty());
  // As the member's sticky assignment, compared by its effective value.
  replay::StickyMemory memory;
  auto d = diff_with_memory(rec, shuffled, 68, 1, memory);
  EXPECT_TRUE(d.empty()) << d.front().path << ": " << d.front().recorded << " / " << d.front().replayed;

  // A partition that really moved is still one, shown as the sorted sets.
  d = diff(rec, cgh_response({{0x22, {3}}, {0x11, {2, 0, 4}}}), 68, 1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "body.assignment.topicPartitions[0].partitions");
  EXPECT_EQ(d[0].recorded, "[0,1,2]");
  EXPECT_EQ(d[0].replayed, "[0,2,4]");
  EXPECT_FALSE(d[0].ignored);
  replay::StickyMemory fresh;
  d = diff_with_memory(rec, cgh_response({{0x11, {0, 1}}, {0x22, {3}}}), 68, 1, fresh);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "body.assignment");
  EXPECT_FALSE(d[0].ignored);
}

// StreamsGroupHeartbeatResponse v1: statuses (code, detail) and active tasks
// (subtopology, partitions); no standby or warm-up tasks, no endpoints.
std::vector<uint8_t> sgh_response(const std::vector<std::pair<int, std::string>>& status,
                                  const std::vector<std::pair<std::string, std::vector<int>>>& active) {
  Bytes b;
  b.i32(12).tags0();
  b.i32(0).i16(0).cnull().cstr("member-0001").i32(3).i32(2000).i32(1000).i64(10000).carr(status.size());
  for (const auto& [code, detail] : status) b.i8(code).cstr(detail).tags0();
  b.carr(active.size());
  for (const auto& [subtopology, partitions] : active) {
    b.cstr(subtopology).carr(partitions.size());
    for (int p : partitions) b.i32(p);
    b.tags0();
  }
  b.cnull().cnull().boolean(false).i32(0).cnull().tags0();
  return b.message();
}

TEST(ReplayCompare, StatusesThatOnlySayATimerHasNotFiredAreTiming) {
  // Kafka's StreamsGroupHeartbeat status codes: 0 STALE_TOPOLOGY, 3 MISSING_INTERNAL_TOPICS, 5 ASSIGNMENT_DELAYED.
  const auto none = sgh_response({}, {{"0", {0, 1}}});
  replay::StickyMemory m1;
  EXPECT_TRUE(diff_with_memory(sgh_response({{3, "internal topics are missing: [app-store-changelog]"}}, {{"0", {0, 1}}}),
                               none, 88, 1, m1).empty());
  replay::StickyMemory m2;
  EXPECT_TRUE(diff_with_memory(none, sgh_response({{5, "assignment delayed"}}, {{"0", {1, 0}}}), 88, 1, m2).empty());
  replay::StickyMemory m3;
  auto d = diff_with_memory(none, sgh_response({{0, "stale topology"}}, {{"0", {0, 1}}}), 88, 1, m3);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "body.status[+0]");
  EXPECT_FALSE(d[0].ignored);
}

TEST(ReplayCompare, AnAssignmentTheTargetDelaysByATimerIsTimingForAnyNumberOfHeartbeats) {
  // Fast timing: the member heartbeats again and again before the target's initial
  // rebalance delay fires; every answer says ASSIGNMENT_DELAYED (5) and has no tasks,
  // where the capture had the assignment (subtopology 0, partition 0) from the first.
  const auto assigned = sgh_response({}, {{"0", {0}}});
  const auto delayed = sgh_response({{5, "assignment delayed"}}, {});
  replay::StickyMemory m;
  for (int beat = 0; beat < 3; ++beat) {
    auto d = diff_with_memory(assigned, delayed, 88, 1, m);
    ASSERT_EQ(d.size(), 1u) << beat;
    EXPECT_EQ(d[0].path, "body.activeTasks");
    EXPECT_EQ(d[0].recorded, "[{\"subtopologyId\":\"0\",\"partitions\":[0]}]");
    EXPECT_EQ(d[0].replayed, "[]");
    EXPECT_TRUE(d[0].ignored) << beat;
    EXPECT_EQ(d[0].rule, "the target's assignment waits for a timer (timing)") << beat;
  }
  // Without the status, an assignment that does not come is a regression.
  auto d = diff_with_memory(assigned, sgh_response({}, {}), 88, 1, m);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].ignored);
  // MISSING_INTERNAL_TOPICS (3) is no promise of an assignment: still a regression.
  replay::StickyMemory m2;
  diff_with_memory(assigned, assigned, 88, 1, m2);
  d = diff_with_memory(assigned, sgh_response({{3, "internal topics are missing: [x]"}}, {}), 88, 1, m2);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].ignored);
}

TEST(ReplayCompare, TopologyDescriptionRequiredIsASequenceOfAsksNotAHeartbeat) {
  // StreamsGroupHeartbeatResponse v1 with topologyDescriptionRequired as given.
  auto beat = [](bool required) {
    Bytes b;
    b.i32(12).tags0();
    b.i32(0).i16(0).cnull().cstr("member-0001").i32(3).i32(2000).i32(1000).i64(10000).carr(0);
    b.cnull().cnull().cnull().boolean(required).i32(0).cnull().tags0();
    return b.message();
  };
  // One member's session: the recorded answers and the target's, heartbeat by
  // heartbeat, as the replay engine compares them (the recorded asks still to
  // come counted when the target first asks alone); returns the flags of the
  // differences found (true: ignored).
  auto run = [&](std::vector<bool> recorded, std::vector<bool> live) {
    FrameDecoder d(ps());
    replay::StickyMemory m;
    bool counted = false;
    std::vector<bool> ignored;
    for (size_t i = 0; i < recorded.size(); ++i) {
      Frame r, l;
      d.decode_response(beat(recorded[i]), 88, 1, r);
      d.decode_response(beat(live[i]), 88, 1, l);
      EXPECT_EQ(replay::asks_alone(ps(), r, l), live[i] && !recorded[i]);
      if (!counted && replay::asks_alone(ps(), r, l)) {
        counted = true;
        for (size_t k = i + 1; k < recorded.size(); ++k) {
          Frame later;
          d.decode_response(beat(recorded[k]), 88, 1, later);
          replay::count_recorded_asks(ps(), later, "1", m);
        }
      }
      for (const auto& diff : diff_with_memory(beat(recorded[i]), beat(live[i]), 88, 1, m)) {
        EXPECT_EQ(diff.path, "body.topologyDescriptionRequired");
        ignored.push_back(diff.ignored);
      }
    }
    return ignored;
  };
  const bool T = true, F = false;
  // The broker asks at the member's first heartbeat, and again once the
  // back-off (30 s doubling, 20% jitter) after its plugin failed is over:
  // four heartbeats earlier than the capture shows is timing.
  EXPECT_EQ(run({T, F, F, F, F, F, T, F}, {T, F, T, F, F, F, F, F}), (std::vector<bool>{T, T}));
  // Later than recorded, even past the end of the session, is timing too.
  EXPECT_EQ(run({T, F, F, T, F}, {T, F, F, F, F}), (std::vector<bool>{T}));
  EXPECT_EQ(run({T, F, T, F, F}, {T, F, F, F, T}), (std::vector<bool>{T, T}));
  // An ask the capture never shows is a regression: a third one, or one of a
  // member the broker had no reason to ask again.
  EXPECT_EQ(run({T, F, T, F, F}, {T, T, F, F, T}), (std::vector<bool>{T, T, F}));
  EXPECT_EQ(run({F, F, F}, {F, T, F}), (std::vector<bool>{F}));
}

TEST(ReplayCompare, AHeartbeatDelayedOnlyLiveIsSentAgain) {
  // The engine re-sends a heartbeat the target answers ASSIGNMENT_DELAYED (5) where the
  // capture's answer has no such status (as for a retriable error).
  FrameDecoder dec(ps());
  auto decode = [&](const std::vector<uint8_t>& m, int api) {
    Frame f;
    dec.decode_response(m, static_cast<int16_t>(api), 1, f);
    EXPECT_TRUE(f.ok());
    return f;
  };
  const Frame assigned = decode(sgh_response({}, {{"0", {0}}}), 88);
  const Frame delayed = decode(sgh_response({{5, "assignment delayed"}}, {}), 88);
  const Frame missing = decode(sgh_response({{3, "internal topics are missing: [x]"}}, {}), 88);
  EXPECT_TRUE(replay::assignment_delayed_only_live(ps(), assigned, delayed));
  EXPECT_FALSE(replay::assignment_delayed_only_live(ps(), delayed, delayed));   // delayed in the capture too
  EXPECT_FALSE(replay::assignment_delayed_only_live(ps(), delayed, assigned));
  EXPECT_FALSE(replay::assignment_delayed_only_live(ps(), assigned, missing));  // another status
  EXPECT_FALSE(replay::assignment_delayed_only_live(ps(), assigned, assigned));
}

TEST(ReplayCompare, ValueArraysOutsideTheSetTableKeepTheirOrder) {
  // MetadataResponse v12 partition replicas: the first is the preferred leader.
  auto metadata = [](std::vector<int> replicas) {
    Bytes b;
    b.i32(3).tags0().i32(0).carr(0).cstr("c").i32(1).carr(1).i16(0).cstr("orders").uuid(uint8_t{1}).i8(0).carr(1);
    b.i16(0).i32(0).i32(replicas.front()).i32(0).carr(replicas.size());
    for (int r : replicas) b.i32(r);
    b.carr(0).carr(0).tags0();                          // isr, offline, partition tags
    b.i32(-2147483648).tags0().tags0();                 // authorized ops, topic tags, body tags
    return b.message();
  };
  auto d = diff(metadata({1, 2}), metadata({2, 1}), 3, 12);
  bool replica_order = false;
  for (const auto& x : d) replica_order |= x.path.find("replicaNodes[0]") != std::string::npos;
  EXPECT_TRUE(replica_order);
}

// DescribeConfigsResponse v4 for broker "1": (name, value) configs; with
// `synonyms`, each also has one synonym of its own name and value (source 4,
// STATIC_BROKER_CONFIG), as a client asking with includeSynonyms gets them.
// `sources` gives a config's source where it is not 5 (DEFAULT_CONFIG).
std::vector<uint8_t> describe_configs_response(const std::vector<std::pair<std::string, std::string>>& configs,
                                              bool synonyms = false, const std::map<std::string, int>& sources = {}) {
  Bytes b;
  b.i32(6).tags0().i32(0).carr(1).i16(0).cnull().i8(4).cstr("1").carr(configs.size());
  for (const auto& [name, value] : configs) {
    auto source = sources.find(name);
    b.cstr(name).cstr(value).boolean(false).i8(source == sources.end() ? 5 : source->second).boolean(false);
    if (synonyms) b.carr(1).cstr(name).cstr(value).i8(4).tags0();
    else b.carr(0);
    b.i8(2).cnull().tags0();
  }
  b.tags0().tags0();
  return b.message();
}

// Compare options with the default ignore rules, the capture's broker
// address `recorded` mapped to the target's.
struct MappedTarget {
  replay::EndpointMap map;
  replay::CompareOptions o;
  MappedTarget(const std::string& recorded, const std::string& target) {
    o.ignore = replay::default_ignore_rules();
    map.add(recorded, target);
    o.endpoints = &map;
  }
  MappedTarget(const MappedTarget&) = delete;
};

// Nodes an answer names are the target's, where the target says they are: a
// coordinator (FindCoordinator v4) and a KIP-951 leader hint with its
// nodeEndpoints (Fetch v16), checked on the live answer against the target's
// brokers and their endpoints on the listener (answers built by hand from the
// specs; the recorded answer is the same, so only these checks speak).
TEST(ReplayCompare, NodesAnAnswerNamesAreTheTargetsAtItsEndpoints) {
  const std::map<int32_t, std::string> endpoints = {{1, "127.0.0.41:9092"}, {2, "127.0.0.42:9092"}, {3, "127.0.0.43:9092"}};
  FrameDecoder dec(ps());
  auto check = [&](const std::vector<uint8_t>& answer, int api, int version) {
    Frame f;
    dec.decode_response(answer, api, version, f);
    EXPECT_TRUE(f.ok());
    replay::CompareOptions o;
    o.ignore = replay::default_ignore_rules();
    o.target_nodes = {1, 2, 3};
    o.target_endpoints = &endpoints;
    std::vector<replay::Difference> out;
    replay::compare(ps(), f, f, o, out);
    std::vector<std::string> why;
    for (const auto& d : out) why.push_back(d.path + ": " + d.rule + (d.ignored ? " (ignored)" : ""));
    return why;
  };
  // FindCoordinator v4: ThrottleTimeMs, Coordinators [Key, NodeId, Host, Port, ErrorCode, ErrorMessage].
  auto coordinator = [](int node, const char* host, int error = 0) {
    Bytes b;
    b.i32(5).tags0().i32(0).carr(1).cstr("orders-app").i32(node).cstr(host).i32(9092).i16(error).cnull().tags0().tags0();
    return b.message();
  };
  EXPECT_TRUE(check(coordinator(2, "127.0.0.42"), 10, 4).empty());
  EXPECT_EQ(check(coordinator(7, "127.0.0.47"), 10, 4),
            std::vector<std::string>{"body.coordinators[0].nodeId: node 7 is none of the target's brokers"});
  EXPECT_EQ(check(coordinator(2, "127.0.0.43"), 10, 4),
            std::vector<std::string>{"body.coordinators[0].host: node 2 is at 127.0.0.42:9092 by the target's Metadata"});
  // A coordinator not available names no node (-1): nothing to check.
  EXPECT_TRUE(check(coordinator(-1, "", 15), 10, 4).empty());

  // Fetch v16: ThrottleTimeMs, ErrorCode, SessionId, Responses [TopicId, Partitions
  // [PartitionIndex, ErrorCode, HighWatermark, LastStableOffset, LogStartOffset,
  // AbortedTransactions, PreferredReadReplica, Records, tag 1 CurrentLeader (LeaderId,
  // LeaderEpoch)]], tag 0 NodeEndpoints [NodeId, Host, Port, Rack].
  auto fetch = [](int hint, const std::vector<std::pair<int, std::string>>& nodes) {
    Bytes b;
    b.i32(5).tags0().i32(0).i16(0).i32(0).carr(1).uuid(0x22).carr(1);
    b.i32(0).i16(6).i64(-1).i64(-1).i64(-1).cnull().i32(-1).cnull();  // NOT_LEADER_OR_FOLLOWER
    wire::MessageBuilder leader;
    leader.i32(hint).i32(4).tags0();
    b.uvarint(1).uvarint(1).uvarint(leader.bytes().size()).raw(leader.bytes());
    b.tags0();                                                         // topic tags
    wire::MessageBuilder eps;
    eps.carr(nodes.size());
    for (const auto& [id, host] : nodes) eps.i32(id).cstr(host).i32(9092).cnull().tags0();
    b.uvarint(1).uvarint(0).uvarint(eps.bytes().size()).raw(eps.bytes());
    return b.message();
  };
  EXPECT_TRUE(check(fetch(3, {{3, "127.0.0.43"}}), 1, 16).empty());
  EXPECT_EQ(check(fetch(3, {{2, "127.0.0.42"}}), 1, 16),
            std::vector<std::string>{"body.responses[0].partitions[0].currentLeader.leaderId: leader hint 3 is not among the answer's nodeEndpoints"});
  EXPECT_EQ(check(fetch(9, {{9, "127.0.0.49"}}), 1, 16),
            (std::vector<std::string>{"body.responses[0].partitions[0].currentLeader.leaderId: leader hint 9 is none of the target's brokers",
                                      "body.nodeEndpoints[0].nodeId: node 9 is none of the target's brokers"}));
}

// A broker's configs, recorded on a single broker and replayed on a cluster of
// three: the replica counts a single broker must cap (Kafka's defaults: 3
// replicas, a minimum in sync of 2) are shape differences; the same value from
// another source (written out in one broker's properties, Kafka's default in
// the other) is ignored; any other value that differs is a regression.
TEST(ReplayCompare, ReplicaCountConfigsFollowTheShapeAndSourcesOfTheSameValueAreIgnored) {
  FrameDecoder dec(ps());
  auto run = [&](const std::vector<uint8_t>& rec_b, const std::vector<uint8_t>& live_b) {
    Frame rec, live;
    dec.decode_response(rec_b, 32, 4, rec);
    dec.decode_response(live_b, 32, 4, live);
    EXPECT_TRUE(rec.ok() && live.ok());
    replay::CompareOptions o;
    o.ignore = replay::default_ignore_rules();
    o.recorded_brokers = 1;
    o.target_brokers = 3;
    o.target_nodes = {1, 2, 3};
    std::vector<replay::Difference> out;
    replay::compare(ps(), rec, live, o, out);
    return out;
  };
  // run-broker writes the single broker's counts out (source 4); the cluster's
  // minimum in sync is Kafka's default, written out (4), min.insync.replicas left
  // at Kafka's default 1 on one side and written out on the other.
  const auto one = describe_configs_response({{"transaction.state.log.replication.factor", "1"},
                                              {"transaction.state.log.min.isr", "1"},
                                              {"min.insync.replicas", "1"},
                                              {"transaction.state.log.num.partitions", "50"}},
                                             false, {{"transaction.state.log.replication.factor", 4},
                                                     {"transaction.state.log.min.isr", 4}});
  auto out = run(one, describe_configs_response({{"transaction.state.log.replication.factor", "3"},
                                                 {"transaction.state.log.min.isr", "2"},
                                                 {"min.insync.replicas", "1"},
                                                 {"transaction.state.log.num.partitions", "50"}},
                                                false, {{"transaction.state.log.replication.factor", 4},
                                                        {"transaction.state.log.min.isr", 4},
                                                        {"min.insync.replicas", 4},
                                                        {"transaction.state.log.num.partitions", 4}}));
  ASSERT_EQ(out.size(), 4u);
  for (const auto& x : out) EXPECT_TRUE(x.ignored) << x.path << " " << x.rule;
  EXPECT_TRUE(out[0].rule.starts_with(replay::kShapeRule)) << out[0].rule;
  EXPECT_EQ(out[1].path, "body.results[0].configs[1].value");
  EXPECT_EQ(out[1].recorded, "\"1\"");
  EXPECT_EQ(out[1].replayed, "\"2\"");
  EXPECT_TRUE(out[1].rule.starts_with(replay::kShapeRule)) << out[1].rule;
  EXPECT_EQ(out[2].path, "body.results[0].configs[2].configSource");
  EXPECT_FALSE(out[2].rule.starts_with(replay::kShapeRule)) << out[2].rule;
  EXPECT_EQ(out[3].path, "body.results[0].configs[3].configSource");
  // A minimum in sync above the target's size, another partition count and its
  // source: regressions; a minimum in sync the single broker capped at 1, 2 now,
  // and so written out: shape.
  out = run(one, describe_configs_response({{"transaction.state.log.replication.factor", "3"},
                                            {"transaction.state.log.min.isr", "4"},
                                            {"min.insync.replicas", "2"},
                                            {"transaction.state.log.num.partitions", "6"}},
                                           false, {{"transaction.state.log.replication.factor", 4},
                                                   {"transaction.state.log.min.isr", 4},
                                                   {"min.insync.replicas", 4},
                                                   {"transaction.state.log.num.partitions", 4}}));
  std::vector<std::string> regressions, shapes;
  for (const auto& x : out) (x.ignored && x.rule.starts_with(replay::kShapeRule) ? shapes : regressions).push_back(x.path);
  EXPECT_EQ(regressions, (std::vector<std::string>{"body.results[0].configs[1].value", "body.results[0].configs[3].value",
                                                   "body.results[0].configs[3].configSource"}));
  EXPECT_EQ(shapes, (std::vector<std::string>{"body.results[0].configs[0].value", "body.results[0].configs[2].value",
                                              "body.results[0].configs[2].configSource"}));
  // Asked with synonyms: a static synonym of the config's own value that only the
  // cluster lists follows the same rules.
  const auto plain = describe_configs_response({{"min.insync.replicas", "1"}, {"default.replication.factor", "1"},
                                                {"num.partitions", "1"}});
  out = run(plain, describe_configs_response({{"min.insync.replicas", "1"}, {"default.replication.factor", "3"},
                                              {"num.partitions", "2"}}, true));
  regressions.clear();
  shapes.clear();
  std::vector<std::string> same;
  for (const auto& x : out)
    (!x.ignored ? regressions : x.rule.starts_with(replay::kShapeRule) ? shapes : same).push_back(x.path);
  EXPECT_EQ(same, (std::vector<std::string>{"body.results[0].configs[0].synonyms[+0]"}));
  EXPECT_EQ(shapes, (std::vector<std::string>{"body.results[0].configs[1].value", "body.results[0].configs[1].synonyms[+0]"}));
  EXPECT_EQ(regressions, (std::vector<std::string>{"body.results[0].configs[2].value", "body.results[0].configs[2].synonyms[+0]"}));
}

TEST(ReplayCompare, ConfigValuesThatDescribeTheHostAreNotRegressions) {
  // The capture's broker was 127.0.0.1:53769; the target is 127.0.0.1:44977.
  MappedTarget target("127.0.0.1:53769", "127.0.0.1:44977");
  replay::CompareOptions& o = target.o;
  const auto rec = describe_configs_response({{"listeners", "PLAINTEXT://127.0.0.1:53769,CONTROLLER://127.0.0.1:35379"},
                                              {"controller.quorum.bootstrap.servers", "127.0.0.1:35379"},
                                              {"controller.listener.names", "CONTROLLER"},
                                              {"log.dirs", "/tmp/kwire-broker.616hMs/data"},
                                              {"num.partitions", "1"}});
  auto d = diff(rec, describe_configs_response({{"listeners", "PLAINTEXT://127.0.0.1:44977,CONTROLLER://127.0.0.1:48071"},
                                                {"controller.quorum.bootstrap.servers", "127.0.0.1:48071"},
                                                {"controller.listener.names", "CONTROLLER"},
                                                {"log.dirs", "/var/lib/kafka/data"},
                                                {"num.partitions", "1"}}),
                32, 4, o);
  ASSERT_EQ(d.size(), 3u);
  for (const auto& x : d) EXPECT_TRUE(x.ignored) << x.path << " " << x.replayed;
  // A broker with SSL listeners, reached on SSL (recorded 42703, the target's 57561): its
  // other listeners pair by name, and its key and trust stores are files on its host.
  MappedTarget ssl("127.0.0.1:42703", "127.0.0.1:57561");
  auto ssl_broker = [](const std::string& plaintext, const std::string& controller, const std::string& tls,
                       const std::string& sasl_ssl, const std::string& dir) {
    const std::string l = "PLAINTEXT://127.0.0.1:" + plaintext + ",CONTROLLER://127.0.0.1:" + controller +
                          ",SSL://127.0.0.1:" + tls + ",SASL_SSL://127.0.0.1:" + sasl_ssl;
    return describe_configs_response({{"advertised.listeners", l},
                                      {"listeners", l},
                                      {"ssl.keystore.location", dir + "/tls/broker.keystore.p12"},
                                      {"ssl.truststore.location", dir + "/tls/truststore.p12"},
                                      {"ssl.keystore.type", "PKCS12"}});
  };
  d = diff(ssl_broker("38713", "59323", "42703", "55005", "/tmp/kwire-broker.ZD7mke"),
           ssl_broker("33861", "33577", "57561", "44327", "/tmp/kwire-broker.2sytVj"), 32, 4, ssl.o);
  ASSERT_EQ(d.size(), 4u);
  for (const auto& x : d) EXPECT_TRUE(x.ignored) << x.path << " " << x.replayed;
  // ... but not a SASL_SSL listener on the port the SSL one was reached at.
  d = diff(ssl_broker("38713", "59323", "42703", "55005", "/tmp/a"), ssl_broker("33861", "33577", "44327", "57561", "/tmp/a"),
           32, 4, ssl.o);
  ASSERT_EQ(d.size(), 2u);
  for (const auto& x : d) EXPECT_FALSE(x.ignored) << x.path << " " << x.replayed;
  // Another listener, or a changed default, is a real difference.
  d = diff(rec, describe_configs_response({{"listeners", "PLAINTEXT://127.0.0.1:44977,SSL://127.0.0.1:44978,"
                                                          "CONTROLLER://127.0.0.1:48071"},
                                           {"controller.quorum.bootstrap.servers", "127.0.0.1:48071"},
                                           {"controller.listener.names", "CONTROLLER"},
                                           {"log.dirs", "/tmp/kwire-broker.616hMs/data"},
                                           {"num.partitions", "3"}}),
           32, 4, o);
  std::vector<std::string> regressions;
  for (const auto& x : d)
    if (!x.ignored) regressions.push_back(x.path + "=" + x.replayed);
  ASSERT_EQ(regressions.size(), 2u);
  EXPECT_EQ(regressions[0], "body.results[0].configs[0].value=\"PLAINTEXT://127.0.0.1:44977,SSL://127.0.0.1:44978,"
                            "CONTROLLER://127.0.0.1:48071\"");
  EXPECT_EQ(regressions[1], "body.results[0].configs[4].value=\"3\"");
  // Another protocol on the broker's listener; a client listener on a port
  // that maps to nothing (the target's 44977 is not where 53770 maps).
  auto regressed = [&](const std::vector<uint8_t>& live_b) {
    std::vector<std::string> out;
    for (const auto& x : diff(rec, live_b, 32, 4, o))
      if (!x.ignored) out.push_back(x.path);
    return out;
  };
  EXPECT_EQ(regressed(describe_configs_response({{"listeners", "SSL://127.0.0.1:44977,CONTROLLER://127.0.0.1:48071"},
                                                 {"controller.quorum.bootstrap.servers", "127.0.0.1:48071"},
                                                 {"controller.listener.names", "CONTROLLER"},
                                                 {"log.dirs", "/x"},
                                                 {"num.partitions", "1"}})),
            std::vector<std::string>{"body.results[0].configs[0].value"});
  replay::EndpointMap elsewhere;
  elsewhere.add("127.0.0.1:53770", "127.0.0.1:44977");
  o.endpoints = &elsewhere;
  EXPECT_EQ(regressed(describe_configs_response({{"listeners", "PLAINTEXT://127.0.0.1:44977,CONTROLLER://127.0.0.1:48071"},
                                                 {"controller.quorum.bootstrap.servers", "127.0.0.1:48071"},
                                                 {"controller.listener.names", "CONTROLLER"},
                                                 {"log.dirs", "/x"},
                                                 {"num.partitions", "1"}})),
            std::vector<std::string>{"body.results[0].configs[0].value"});
}

TEST(ReplayCompare, ConfigSynonymsThatDescribeTheHostMapLikeTheirConfigs) {
  MappedTarget target("127.0.0.1:40419", "127.0.0.1:51991");
  const replay::CompareOptions& o = target.o;
  // The controller's port (42843 recorded, 44385 live) is known from the
  // broker's own listeners and controller.listener.names, which the synonyms
  // of a config do not carry.
  auto configs = [](const std::string& client, const std::string& controller) {
    return describe_configs_response({{"listeners", "PLAINTEXT://127.0.0.1:" + client + ",CONTROLLER://127.0.0.1:" + controller},
                                      {"controller.quorum.bootstrap.servers", "127.0.0.1:" + controller},
                                      {"controller.listener.names", "CONTROLLER"}},
                                     true);
  };
  const auto rec = configs("40419", "42843");
  auto d = diff(rec, configs("51991", "44385"), 32, 4, o);
  ASSERT_EQ(d.size(), 4u);   // two values and their two synonyms
  for (const auto& x : d) EXPECT_TRUE(x.ignored) << x.path << " " << x.replayed;
  EXPECT_EQ(d[1].path, "body.results[0].configs[0].synonyms[0].value");
  // A controller on a port the recorded one does not map to: the value and its synonym differ.
  std::vector<std::string> regressions;
  for (const auto& x : diff(rec, configs("51991", "44385") /* same */, 32, 4, o))
    if (!x.ignored) regressions.push_back(x.path);
  EXPECT_TRUE(regressions.empty());
  for (const auto& x : diff(rec, describe_configs_response({{"listeners", "PLAINTEXT://127.0.0.1:51991,CONTROLLER://127.0.0.1:44385"},
                                                            {"controller.quorum.bootstrap.servers", "127.0.0.1:44386"},
                                                            {"controller.listener.names", "CONTROLLER"}},
                                                           true),
                            32, 4, o))
    if (!x.ignored) regressions.push_back(x.path);
  EXPECT_EQ(regressions, (std::vector<std::string>{"body.results[0].configs[1].value",
                                                   "body.results[0].configs[1].synonyms[0].value"}));
}

TEST(ReplayCompare, ErrorCodesAreNamed) {
  auto d = diff(produce_response({{0, 5}}), produce_response({{0, 5}}, 10), 0, 11);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].recorded_text(), "0 NONE");                  // Kafka's Errors: 0 NONE,
  EXPECT_EQ(d[0].replayed_text(), "10 MESSAGE_TOO_LARGE");    // 10 MESSAGE_TOO_LARGE
  d = diff(produce_response({{0, 5}}), produce_response({{0, 6}}), 0, 11);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].replayed_text(), "6");                       // not an error code: no name
}

TEST(ReplayReport, FirstDivergencePerSessionWithItsConsequencesGrouped) {
  replay::ReplayResult r;
  r.sessions = {{1, "127.0.0.1:5001", "127.0.0.1:9092", "t", "producer-1", "", 0},
                {2, "127.0.0.1:5002", "127.0.0.1:9092", "t", "consumer-1", "", 0}};
  auto exchange = [](uint32_t session, uint64_t frame, const char* api, std::vector<replay::Difference> d) {
    replay::ExchangeResult e;
    e.session = session;
    e.frame = frame;
    e.response_frame = frame + 1;
    e.api_name = api;
    e.api_version = 11;
    e.outcome = d.empty() ? replay::Outcome::Same : replay::Outcome::Regression;
    e.differences = std::move(d);
    return e;
  };
  replay::Difference too_large{"body.responses[0].partitionResponses[0].errorCode", "0", "10", "", false, "NONE",
                               "MESSAGE_TOO_LARGE"};
  replay::Difference offset{"body.responses[0].partitionResponses[0].baseOffset", "5", "-1", "", false, "", ""};
  replay::Difference ignored{"body.throttleTimeMs", "0", "3", "**.throttleTimeMs", true, "", ""};
  r.exchanges = {exchange(1, 10, "Produce", {}), exchange(1, 20, "Produce", {too_large, offset, ignored}),
                 exchange(1, 30, "Produce", {too_large}), exchange(1, 40, "Produce", {too_large, offset}),
                 exchange(2, 50, "Fetch", {})};
  std::ostringstream text, json;
  replay::write_text_report(text, r, {"c.pcapng", "t", "fast", 10});
  const std::string t = text.str();
  EXPECT_NE(t.find("      3  Produce body.responses.partitionResponses.errorCode\n"), std::string::npos) << t;
  EXPECT_NE(t.find("      2  Produce body.responses.partitionResponses.baseOffset\n"), std::string::npos) << t;
  const size_t first = t.find("  session 1 127.0.0.1:5001 -> 127.0.0.1:9092 (producer-1)\n    frame 20 Produce v11");
  ASSERT_NE(first, std::string::npos) << t;
  EXPECT_NE(t.find("body.responses[0].partitionResponses[0].errorCode: recorded 0 NONE, replayed 10 MESSAGE_TOO_LARGE",
                   first), std::string::npos) << t;
  EXPECT_NE(t.find("then 2 more regressed responses in this session, up to frame 40:\n"
                   "        Produce body.responses.partitionResponses.baseOffset x1\n"
                   "        Produce body.responses.partitionResponses.errorCode x2\n", first), std::string::npos) << t;
  EXPECT_EQ(t.find("session 2 "), std::string::npos) << t;   // no regression there
  EXPECT_EQ(t.find("throttleTimeMs"), std::string::npos) << t;  // ignored differences are not listed
  replay::write_json_report(json, r, {"c.pcapng", "t", "fast", 10});
  const std::string j = json.str();
  EXPECT_NE(j.find("\"recorded\":0,\"replayed\":10,\"recordedName\":\"NONE\",\"replayedName\":\"MESSAGE_TOO_LARGE\""),
            std::string::npos) << j;
  EXPECT_NE(j.find("\"regressionsByField\":{\"Produce body.responses.partitionResponses.baseOffset\":2,"
                   "\"Produce body.responses.partitionResponses.errorCode\":3}"), std::string::npos) << j;
}

// A broker's own connections are never sent: named per session, and counted
// by kind in both reports.
TEST(ReplayReport, BrokerToBrokerSessionsAreCountedByKind) {
  replay::ReplayResult r;
  r.sessions = {{1, "127.0.0.12:40001", "127.0.0.11:9092", "t", "broker-2-fetcher-0", "a broker's replica fetch", 0},
                {2, "127.0.0.13:40002", "127.0.0.11:9092", "t", "broker-3-fetcher-0", "a broker's replica fetch", 0},
                {3, "127.0.0.11:40003", "127.0.0.12:9093", "t", "raft-client-1", "a broker's controller", 0},
                {4, "127.0.0.1:5002", "127.0.0.11:9092", "t", "consumer-1", "", 0}};
  r.sessions[0].broker_traffic = r.sessions[1].broker_traffic = "replica fetch";
  r.sessions[2].broker_traffic = "controller";
  std::ostringstream text, json;
  replay::write_text_report(text, r, {"c.pcapng", "t", "fast", 10});
  EXPECT_NE(text.str().find("sessions: 1 replayed, 3 not\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("  broker-to-broker connections, never sent: replica fetch 2, controller 1\n"),
            std::string::npos) << text.str();
  replay::write_json_report(json, r, {"c.pcapng", "t", "fast", 10});
  EXPECT_NE(json.str().find("\"brokerToBroker\":{\"replica fetch\":2,\"controller\":1}"), std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"skipped\":\"a broker's controller\",\"brokerToBroker\":\"controller\""),
            std::string::npos) << json.str();
}

// Per session, the first divergence and whether the retry budget was spent,
// in the JSON report as in the text one.
TEST(ReplayReport, FirstDivergenceAndRetryBudgetInJson) {
  replay::ReplayResult r;
  r.sessions = {{1, "127.0.0.1:5001", "127.0.0.1:9092", "t", "producer-1", "", 0},
                {2, "127.0.0.1:5002", "127.0.0.1:9092", "t", "consumer-1", "", 0}};
  r.sessions[0].retries = 50;
  r.sessions[0].retry_s = 4.5;
  r.sessions[0].retry_budget_spent = true;
  auto exchange = [](uint32_t session, uint64_t frame, const char* api, std::vector<replay::Difference> d) {
    replay::ExchangeResult e;
    e.session = session;
    e.frame = frame;
    e.api_name = api;
    e.api_version = 13;
    e.outcome = d.empty() ? replay::Outcome::Same : replay::Outcome::Regression;
    e.differences = std::move(d);
    return e;
  };
  replay::Difference ignored{"body.throttleTimeMs", "0", "3", "**.throttleTimeMs", true, "", ""};
  replay::Difference unknown{"body.responses[0].partitionResponses[0].errorCode", "0", "3", "", false, "NONE",
                             "UNKNOWN_TOPIC_OR_PARTITION"};
  replay::Difference offset{"body.responses[0].partitionResponses[0].baseOffset", "5", "-1", "", false, "", ""};
  // Listed out of frame order: the first divergence is the lowest frame's first field.
  r.exchanges = {exchange(1, 40, "Produce", {offset}), exchange(1, 30, "Produce", {ignored, unknown, offset}),
                 exchange(2, 50, "Fetch", {})};
  std::ostringstream text, json;
  replay::write_text_report(text, r, {"c.pcapng", "t", "fast", 10});
  EXPECT_NE(text.str().find("  session 1 127.0.0.1:5001 -> 127.0.0.1:9092 (producer-1), retry budget spent\n"
                            "    frame 30 Produce v13"), std::string::npos) << text.str();
  replay::write_json_report(json, r, {"c.pcapng", "t", "fast", 10});
  const std::string j = json.str();
  EXPECT_NE(j.find("\"retryBudgetSpent\":1}"), std::string::npos) << j;   // the summary: one session
  EXPECT_NE(j.find("\"clientId\":\"producer-1\",\"reconnects\":0,\"retries\":50,\"retrySeconds\":4.5,"
                   "\"retryBudgetSpent\":true,\"firstDivergence\":{\"frame\":30,\"api\":\"Produce\",\"version\":13,"
                   "\"path\":\"body.responses[0].partitionResponses[0].errorCode\",\"recorded\":0,\"replayed\":3,"
                   "\"recordedName\":\"NONE\",\"replayedName\":\"UNKNOWN_TOPIC_OR_PARTITION\"}}"),
            std::string::npos) << j;
  EXPECT_NE(j.find("\"clientId\":\"consumer-1\",\"reconnects\":0,\"retries\":0,\"retrySeconds\":0,"
                   "\"retryBudgetSpent\":false}"), std::string::npos) << j;   // no regression: no firstDivergence
}

// Retries: only a retriable live error where the capture shows none, within the
// request's own limits and the session's budget, which bounds a session whose
// every request keeps failing.
TEST(ReplayRetryBudget, OnlyRetriableWhereTheCaptureSucceeded) {
  replay::RetryBudget b;
  const int64_t lim = 10'000'000;
  EXPECT_TRUE(replay::should_retry(1, 0, true, 0, lim, 1, b, 1000));    // retriable live, success recorded
  EXPECT_TRUE(replay::should_retry(1, 2, true, 0, lim, 1, b, 1000));    // a protocol step recorded (MEMBER_ID_REQUIRED)
  EXPECT_FALSE(replay::should_retry(1, 1, true, 0, lim, 1, b, 1000));   // the capture was retriable too
  EXPECT_FALSE(replay::should_retry(2, 0, true, 0, lim, 1, b, 1000));   // MESSAGE_TOO_LARGE is not retriable
  EXPECT_FALSE(replay::should_retry(0, 0, true, 0, lim, 1, b, 1000));   // no error
  EXPECT_FALSE(replay::should_retry(1, 0, false, 0, lim, 1, b, 1000));  // an answer that does not decode
  EXPECT_FALSE(replay::should_retry(1, 0, true, lim, lim, 1, b, 1000)); // the request's own time is up
  EXPECT_FALSE(replay::should_retry(1, 0, true, 0, lim, 100, b, 1000)); // its attempts are up
  EXPECT_EQ(b.retries, 2u);
  EXPECT_EQ(b.spent_us, 2000);
  EXPECT_FALSE(b.spent);   // refusals for the request's own reasons do not spend the session's budget
}

TEST(ReplayRetryBudget, CountAndTimeBoundASession) {
  // 5 s and 20 retries (the defaults). Every request answered UNKNOWN_TOPIC_OR_PARTITION
  // after 2 ms, back-off 100 ms: 20 retries are granted (2.04 s), the 21st is not.
  replay::RetryBudget b;
  EXPECT_EQ(b.max_retries, 20u);
  EXPECT_EQ(b.max_us, 5'000'000);
  int granted = 0;
  for (int i = 0; i < 1000; ++i) granted += replay::should_retry(1, 0, true, 0, 10'000'000, 1, b, 102'000);
  EXPECT_EQ(granted, 20);
  EXPECT_TRUE(b.spent);
  EXPECT_EQ(b.spent_us, 20 * 102'000);
  // Time first: back-offs of 1 s: 4 fit in 5 s (4.008 s), the 5th would not.
  replay::RetryBudget t;
  granted = 0;
  for (int i = 0; i < 1000; ++i) granted += replay::should_retry(1, 0, true, 0, 10'000'000, 1, t, 1'002'000);
  EXPECT_EQ(granted, 4);
  EXPECT_EQ(t.spent_us, 4 * 1'002'000);
  // Retries that got their request answered are given back; a coordinator loading is not charged.
  replay::RetryBudget r;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(replay::should_retry(1, 0, true, 0, 10'000'000, 1, r, 1'000'000));
  r.refund(3, 3'000'000);
  EXPECT_EQ(r.retries, 0u);
  EXPECT_EQ(r.spent_us, 0);
  for (int i = 0; i < 30; ++i) EXPECT_TRUE(replay::should_retry(1, 0, true, 0, 10'000'000, 1, r, 1'000'000, false));
  EXPECT_EQ(r.spent_us, 0);
  EXPECT_FALSE(r.spent);
  EXPECT_EQ(r.waited_us, 30'000'000);
  // Up to a minute of waiting per session (the default): a target whose
  // background work never ends (an assignment that never comes) then costs
  // what any retry does, 5 more seconds here, and the session goes on.
  replay::RetryBudget w;
  EXPECT_EQ(w.max_wait_us, 60'000'000);
  granted = 0;
  for (int i = 0; i < 1000; ++i) granted += replay::should_retry(1, 0, true, 0, 10'000'000, 1, w, 1'000'000, false);
  EXPECT_EQ(granted, 60 + 5);
  EXPECT_TRUE(w.waited_out);
  EXPECT_TRUE(w.spent);
  EXPECT_EQ(w.waited_us, 60'000'000);
  EXPECT_EQ(w.spent_us, 5'000'000);
  // Once spent it stays spent, even for a cheaper retry.
  EXPECT_FALSE(t.grant(1));
  // No budget: no retry at all.
  replay::RetryBudget none;
  none.max_us = 0;
  EXPECT_FALSE(replay::should_retry(1, 0, true, 0, 10'000'000, 1, none, 1));
  EXPECT_TRUE(none.spent);
}

// JoinGroup v9, group "classic-app": the request, and a response naming the
// leader and (for the leader) the members. Their metadata: a
// ConsumerProtocolSubscription v0 of topic "orders", no user data.
std::vector<uint8_t> subscription() {
  return {0, 0, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0xff, 0xff, 0xff, 0xff};
}
std::vector<uint8_t> join_request(const std::string& member) {
  Bytes b = test::request_header_v2(11, 9, 5);
  b.cstr("classic-app").i32(45000).i32(300000).cstr(member).cnull().cstr("consumer")
      .carr(1).cstr("cooperative-sticky").cbytes(subscription()).tags0().cnull().tags0();
  return b.message();
}
std::vector<uint8_t> join_response(int generation, const std::string& leader, const std::string& member,
                                   const std::vector<std::string>& members) {
  Bytes b;
  b.i32(5).tags0();
  b.i32(0).i16(0).i32(generation).cstr("consumer").cstr("cooperative-sticky").cstr(leader).boolean(false)
      .cstr(member).carr(members.size());
  for (const auto& m : members) b.cstr(m).cnull().cbytes(subscription()).tags0();
  b.tags0();
  return b.message();
}

TEST(ReplayState, LearnedMemberIdsFollowTheValueIntoFieldsOfAnyName) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  const std::string rec_a = "consumer-classic-app-1-0f1e2d3c", live_a = "consumer-classic-app-1-99887766",
                    rec_b = "consumer-classic-app-2-aabbccdd", live_b = "consumer-classic-app-2-55443322";
  const auto req_b = join_request(""), rec_a_b = join_response(1, rec_a, rec_a, {rec_a}),
             live_a_b = join_response(1, live_a, live_a, {live_a}), rec_b_b = join_response(2, rec_a, rec_b, {}),
             live_b_b = join_response(2, live_a, live_b, {});
  Frame req, ra, la, rb, lb;
  d.decode_request(req_b, req);
  d.decode_response(rec_a_b, 11, 9, ra);
  d.decode_response(live_a_b, 11, 9, la);
  d.decode_response(rec_b_b, 11, 9, rb);
  d.decode_response(live_b_b, 11, 9, lb);
  for (const Frame* f : {&req, &ra, &la, &rb, &lb})
    ASSERT_TRUE(f->ok()) << (f - &req) << " " << f->errors.size() << " " << (f->errors.empty() ? "" : f->errors.front().reason);
  st.learn(req, ra, la, 1);
  st.learn(req, rb, lb, 2);
  // The follower's recorded answer names the leader by its recorded id: translated, it is the live one.
  st.translate_response(rb, req, 2);
  std::vector<replay::Difference> out;
  replay::compare(ps(), rb, lb, {}, out);
  EXPECT_TRUE(out.empty()) << out.front().path << ": " << out.front().recorded;

  // The leader's next JoinGroup answer lists both members.
  const auto rec_all = join_response(3, rec_a, rec_a, {rec_a, rec_b}),
             live_all = join_response(3, live_a, live_a, {live_b, live_a});
  Frame r3, l3;
  d.decode_response(rec_all, 11, 9, r3);
  d.decode_response(live_all, 11, 9, l3);
  st.translate_response(r3, req, 1);
  out.clear();
  replay::compare(ps(), r3, l3, {}, out);
  EXPECT_TRUE(out.empty()) << out.front().path << ": " << out.front().recorded;

  // A rejoin carries the live id; an id that was never learned stays as it is.
  const auto rejoin_b = join_request(rec_a), other_b = join_request("consumer-classic-app-9-00000000");
  Frame rejoin, other;
  d.decode_request(rejoin_b, rejoin);
  d.decode_request(other_b, other);
  EXPECT_EQ(st.rewrite_request(rejoin, 1), 1);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(rejoin, bytes, error)) << error;
  EXPECT_EQ(bytes, join_request(live_a));
  EXPECT_EQ(st.rewrite_request(other, 1), 0);
}

TEST(ReplayState, AnEmptyRecordedMemberIdIsNotAValueToMap) {
  // The capture's first JoinGroup was answered COORDINATOR_LOAD_IN_PROGRESS (14)
  // with no member id; the target assigned one at once (MEMBER_ID_REQUIRED).
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  auto answer = [](int error, const std::string& member) {
    Bytes b;
    b.i32(5).tags0().i32(0).i16(error).i32(-1).cnull().cnull().cstr("").boolean(false).cstr(member).carr(0).tags0();
    return b.message();
  };
  const auto req_b = join_request(""), rec_b = answer(14, ""), live_b = answer(79, "kafka-python-2.0-0aa1b2c3d4");
  Frame req, rec, live;
  d.decode_request(req_b, req);
  d.decode_response(rec_b, 11, 9, rec);
  d.decode_response(live_b, 11, 9, live);
  for (const Frame* f : {&req, &rec, &live}) ASSERT_TRUE(f->ok()) << f->errors.front().reason;
  st.learn(req, rec, live, 1);
  // Another client's first JoinGroup (member id "") goes out as recorded.
  const auto other_b = join_request("");
  Frame other;
  d.decode_request(other_b, other);
  EXPECT_EQ(st.rewrite_request(other, 2), 0);
}

}  // namespace
}  // namespace kwire

namespace kwire {
namespace {

int exit_code(const test::CommandResult& r) { return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1; }

TEST(ReplayCli, UsageErrorsExitTwoAndSayWhat) {
  const std::string demo = std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng";
  auto r = test::kwire_cmd("replay -r " + demo);
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("--target HOST:PORT is required"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay --target 127.0.0.1:1");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("-r CAPTURE is required"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay -r " + demo + " --target 127.0.0.1");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("'127.0.0.1' is not HOST:PORT"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay -r " + demo + " --target 127.0.0.1:1 --map 10.0.0.1:9092");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("--map needs ADDR:PORT=HOST:PORT"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay -r " + demo + " --target 127.0.0.1:1 --api NoSuchApi");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("no api named NoSuchApi"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay -r " + demo + " --target 127.0.0.1:1 --expect body.errorCode");
  EXPECT_EQ(exit_code(r), 2);
  r = test::kwire_cmd("replay -r " + demo + " --target 127.0.0.1:1 --timing slow");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("--timing is recorded or fast, not slow"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay -r /nonexistent.pcapng --target 127.0.0.1:1");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("/nonexistent.pcapng"), std::string::npos) << r.err;
  for (const char* bad : {"x", "-1", "5:", "5:-2", "5:3x", "5s"}) {
    r = test::kwire_cmd("replay -r " + demo + " --target 127.0.0.1:1 --retry-budget " + bad);
    EXPECT_EQ(exit_code(r), 2) << bad;
    EXPECT_NE(r.err.find("--retry-budget needs seconds and optionally a count of retries (S or S:N, e.g. 5:20), not " +
                         std::string(bad)), std::string::npos) << r.err;
  }
  r = test::kwire_cmd("replay -r " + demo + " --target 127.0.0.1:1 --script /nonexistent.lua");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("/nonexistent.lua"), std::string::npos) << r.err;
}

TEST(ReplayCli, TlsWithoutKeysIsNamed) {
  // captures/tls/scram.pcapng has 7 TLS connections (tshark: 7 ClientHellos) and no
  // secrets blocks: without its key log there is nothing to replay, and it says why.
  auto r = test::kwire_cmd("replay -r " + std::string(KWIRE_SOURCE_DIR) + "/captures/tls/scram.pcapng --target 127.0.0.1:1");
  EXPECT_NE(r.err.find("7 TLS connections are not replayed: no key for them (give --tls-keylog FILE"), std::string::npos)
      << r.err;
}

TEST(ReplayCli, TlsAndSaslOptionsAreChecked) {
  auto r = test::kwire_cmd("replay -r x.pcapng --target 127.0.0.1:1 --sasl-scram-256 alice");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("--sasl-scram-256 needs USER:PASSWORD"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay -r x.pcapng --target 127.0.0.1:1 --sasl-plain a:b --sasl-plain c:d");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("given twice"), std::string::npos) << r.err;
  r = test::kwire_cmd("replay -r " + std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng" +
                      " --target 127.0.0.1:1 --tls-ca /nonexistent/ca.pem");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("--tls-ca /nonexistent/ca.pem"), std::string::npos) << r.err;
}

TEST(ReplayCli, TargetsTakeAListAndProtocols) {
  std::string protocol, error;
  replay::HostPort hp;
  ASSERT_TRUE(replay::parse_target("sasl_ssl://broker-1:9094", protocol, hp, error)) << error;
  EXPECT_EQ(protocol, "SASL_SSL");
  EXPECT_EQ(hp.str(), "broker-1:9094");
  ASSERT_TRUE(replay::parse_target("[::1]:9092", protocol, hp, error)) << error;
  EXPECT_EQ(protocol, "");
  EXPECT_EQ(hp.str(), "[::1]:9092");
  EXPECT_FALSE(replay::parse_target("INTERNAL://h:1", protocol, hp, error));
  EXPECT_NE(error.find("unknown security protocol 'INTERNAL'"), std::string::npos) << error;
  EXPECT_EQ(replay::security_protocol(true, true), "SASL_SSL");
  EXPECT_EQ(replay::security_protocol(false, true), "SASL_PLAINTEXT");
  EXPECT_EQ(replay::security_protocol(true, false), "SSL");
  EXPECT_EQ(replay::security_protocol(false, false), "PLAINTEXT");
  auto r = test::kwire_cmd("replay -r x.pcapng --target 127.0.0.1:1,KERBEROS://127.0.0.1:2");
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_NE(r.err.find("--target: unknown security protocol 'KERBEROS'"), std::string::npos) << r.err;
}

// captures/tls/listeners: 17 TLS connections (tshark: 17 ServerHellos), 10 to the SSL
// listener 127.0.0.1:36643 and 7 to the SASL_SSL one 127.0.0.1:48977, each of those with
// a SaslHandshake v1 for SCRAM-SHA-512 (captures/MANIFEST.md).
TEST(ReplayRecording, SessionsKnowTheirListenersProtocol) {
  replay::Recording rec;
  std::string error;
  ASSERT_TRUE(replay::load_recording(std::string(KWIRE_SOURCE_DIR) + "/captures/tls/listeners-secrets.pcapng", ps(),
                                     SessionOptions{}, rec, error)) << error;
  std::map<std::string, int> tls, sasl;
  for (const auto& s : rec.sessions) {
    tls[s.broker.str()] += s.tls ? 1 : 0;
    if (!s.sasl_mechanism.empty()) sasl[s.broker.str() + " " + s.sasl_mechanism] += 1;
  }
  EXPECT_EQ(rec.sessions.size(), 17u);
  EXPECT_EQ(tls, (std::map<std::string, int>{{"127.0.0.1:36643", 10}, {"127.0.0.1:48977", 7}}));
  EXPECT_EQ(sasl, (std::map<std::string, int>{{"127.0.0.1:48977 SCRAM-SHA-512", 7}}));
}

// A listener that carries the quorum's own RPCs is a controller listener:
// everything sent to it is a broker's, even what a client could send too.
TEST(ReplayRecording, EverySessionToAControllerListenerIsABrokers) {
  auto session = [](uint32_t id, uint16_t port, std::initializer_list<int16_t> apis) {
    replay::RecordedSession s;
    s.id = id;
    s.broker.addr[0] = 127, s.broker.addr[3] = 1;
    s.broker.port = port;
    uint64_t frame = id * 10;
    for (int16_t a : apis) {
      replay::Exchange& e = s.exchanges.emplace_back();
      e.api_key = a, e.api_version = 0, e.frame = ++frame;
    }
    return s;
  };
  replay::Recording rec;
  rec.sessions.push_back(session(1, 9093, {18, 19}));      // ApiVersions, CreateTopics (forwarded)
  rec.sessions.push_back(session(2, 9093, {63, 63}));      // BrokerHeartbeat
  rec.sessions.push_back(session(3, 9092, {18, 19, 3}));   // a client's ApiVersions, CreateTopics, Metadata
  rec.sessions.push_back(session(4, 9094, {57}));          // UpdateFeatures: controller-only, clients send it too
  replay::mark_controller_listeners(rec, ps());
  EXPECT_EQ(rec.sessions[0].broker_traffic, "controller");
  EXPECT_NE(rec.sessions[0].skip.find("controller listener 127.0.0.1:9093"), std::string::npos) << rec.sessions[0].skip;
  EXPECT_NE(rec.sessions[0].skip.find("BrokerHeartbeat v0 in frame 21"), std::string::npos) << rec.sessions[0].skip;
  EXPECT_EQ(rec.sessions[1].broker_traffic, "controller");
  EXPECT_TRUE(rec.sessions[2].broker_traffic.empty());
  EXPECT_TRUE(rec.sessions[2].skip.empty());
  EXPECT_TRUE(rec.sessions[3].skip.empty());
}

// captures/txn-consumer: tshark shows two TCP streams to the broker's controller
// listener 127.0.0.1:39185: stream 0 (BrokerHeartbeat, joined mid-stream) and
// stream 3 (ApiVersions, CreateTopics, Envelope, AllocateProducerIds).
TEST(ReplayRecording, ControllerListenerSessionsOfARealCaptureAreNeverSent) {
  replay::Recording rec;
  std::string error;
  ASSERT_TRUE(replay::load_recording(std::string(KWIRE_SOURCE_DIR) + "/captures/txn-consumer.pcapng", ps(),
                                     SessionOptions{}, rec, error)) << error;
  int to_controller = 0;
  for (const auto& s : rec.sessions) {
    if (s.broker.str() != "127.0.0.1:39185") {
      EXPECT_NE(s.broker_traffic, "controller") << s.broker.str();
      continue;
    }
    ++to_controller;
    EXPECT_EQ(s.broker_traffic, "controller");
    EXPECT_FALSE(s.skip.empty());
  }
  EXPECT_EQ(to_controller, 2);
}

TEST(ReplayCli, HelpAndRules) {
  auto r = test::kwire_cmd("replay --help");
  EXPECT_EQ(exit_code(r), 0);
  for (const char* opt : {"--target", "--map", "--timing", "--speed", "--api", "--group", "--conn", "--rename-group",
                          "--rename-topic", "--setup", "--ignore", "--expect", "--list-rules", "--report", "--junit",
                          "--record-out", "--script", "--timeout", "--reconnect-timeout", "--sasl-plain", "--budget",
                          "--retry-budget"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  r = test::kwire_cmd("replay --list-rules");
  EXPECT_EQ(exit_code(r), 0);
  for (const char* s : {"member epoch", "producer id", "fetch session", "StreamsGroupHeartbeat.MemberEpoch",
                        "InitProducerId.ProducerId", "**.throttleTimeMs", "topic id", "followed by value",
                        "Compared without order", "**.partitions", "ConsumerGroupHeartbeat:body.assignment"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace kwire

namespace kwire {
namespace {

// What replay takes from a capture: per connection, requests in order with
// their answers, the pipelining depth, the causal order across connections,
// and why a session cannot be replayed.
TEST(ReplayRecording, SessionsDepthsOrderAndSkips) {
  const std::string file = (std::filesystem::temp_directory_path() / "kwire-replay-recording.pcap").string();
  {
    SyntheticCapture cap(file);
    // Connection A: two heartbeats pipelined (the second sent before the first answer).
    uint32_t a = cap.connect(make_endpoint("127.0.0.1", 40200), make_endpoint("127.0.0.1", 9092));
    cap.send(a, StreamSide::FromClient, test::heartbeat_request(1, "m", 0));
    cap.send(a, StreamSide::FromClient, test::heartbeat_request(2, "m", 0));
    cap.send(a, StreamSide::FromServer, test::heartbeat_response(1, "m", 1));
    cap.send(a, StreamSide::FromServer, test::heartbeat_response(2, "m", 1));
    // Connection B, after both answers: a heartbeat, then a Produce with acks=0.
    uint32_t b = cap.connect(make_endpoint("127.0.0.1", 40201), make_endpoint("127.0.0.1", 9092));
    cap.send(b, StreamSide::FromClient, test::heartbeat_request(1, "n", 0));
    cap.send(b, StreamSide::FromServer, test::heartbeat_response(1, "n", 1));
    Bytes produce = test::request_header_v2(0, 11, 2);
    produce.cnull().i16(0).i32(30000).carr(1).cstr("t").carr(1).i32(0).cbytes(batch(-1, -1)).tags0().tags0().tags0();
    cap.send(b, StreamSide::FromClient, produce.message());
    cap.close(a);
    cap.close(b);
    // Connection C authenticates with SASL/PLAIN.
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40202), make_endpoint("127.0.0.1", 9092));
    Bytes hs_req, hs_resp;
    hs_req.i16(17).i16(1).i32(1).str("c").str("PLAIN");
    hs_resp.i32(1).i16(0).i32(1).str("PLAIN");
    cap.send(c, StreamSide::FromClient, hs_req.message());
    cap.send(c, StreamSide::FromServer, hs_resp.message());
    cap.close(c);
  }
  replay::Recording rec;
  std::string error;
  ASSERT_TRUE(replay::load_recording(file, ps(), SessionOptions{}, rec, error)) << error;
  std::filesystem::remove(file);
  ASSERT_EQ(rec.sessions.size(), 3u);
  const auto& a = rec.sessions[0];
  ASSERT_EQ(a.exchanges.size(), 2u);
  EXPECT_TRUE(a.skip.empty()) << a.skip;
  EXPECT_EQ(a.client.port, 40200);
  EXPECT_EQ(a.exchanges[0].depth, 1u);
  EXPECT_EQ(a.exchanges[1].depth, 2u);       // sent with the first still unanswered
  EXPECT_EQ(a.exchanges[0].after, 0u);
  EXPECT_EQ(a.exchanges[1].after, 0u);
  EXPECT_EQ(a.exchanges[0].response_seq, 0u);
  EXPECT_EQ(a.exchanges[1].response_seq, 1u);
  EXPECT_EQ(a.exchanges[0].request, test::heartbeat_request(1, "m", 0));
  EXPECT_EQ(a.exchanges[1].response, test::heartbeat_response(2, "m", 1));
  const auto& b = rec.sessions[1];
  ASSERT_EQ(b.exchanges.size(), 2u);
  EXPECT_EQ(b.exchanges[0].after, 2u);       // both answers on A came before it
  EXPECT_EQ(b.exchanges[0].response_seq, 2u);
  EXPECT_FALSE(b.exchanges[1].expects_response);  // acks=0
  EXPECT_EQ(b.exchanges[1].response_seq, replay::kNoResponse);
  EXPECT_EQ(rec.responses, 4u);             // with the SaslHandshake answer
  EXPECT_EQ(rec.sessions[2].skip, "authenticates with SASL PLAIN");
}

}  // namespace
}  // namespace kwire

// Races between concurrent sessions, reads after admin writes, and listener
// endpoints mapped to the target's: messages built from the specs, expected
// values worked out by hand.
#include "replay/concurrency.hpp"

namespace kwire {
namespace {

using test::Bytes;

// ProduceResponse v13: partition 0 of the topic with id `fill` x16, at `base`.
std::vector<uint8_t> produce_response_v13(uint8_t fill, int64_t base, int error = 0) {
  Bytes b;
  b.i32(9).tags0();
  b.carr(1).uuid(fill).carr(1).i32(0).i16(error).i64(base).i64(-1).i64(0)  // TopicId; Index, ErrorCode, BaseOffset, LogAppendTimeMs, LogStartOffset
      .carr(0).cnull().tags0()                                              // RecordErrors, ErrorMessage
      .tags0();
  b.i32(0).tags0();
  return b.message();
}

std::vector<uint8_t> produce_request_v13(uint8_t topic_fill) {
  Bytes b = test::request_header_v2(0, 13, 9);
  b.cnull().i16(-1).i32(30000).carr(1).uuid(topic_fill).carr(1).i32(0).cnull().tags0().tags0().tags0();
  return b.message();
}

const ProgramSet& rps() { return ProgramSet::release(); }

// The topic whose id is 16 bytes of 0x11 is "orders".
std::string orders_by_id(std::string_view id) { return id == std::string(16, '\x11') ? "orders" : ""; }

struct RaceCase {
  replay::Recording rec;
  replay::ReplayResult result;
  // One session with one Produce to orders-0: recorded window [req, resp] (us),
  // live send time (us after the start), and the baseOffset difference, if any.
  void produce(uint32_t id, int64_t req, int64_t resp, int64_t live_sent, int64_t recorded_base, int64_t live_base,
               bool error_too = false) {
    replay::RecordedSession s;
    s.id = id;
    replay::Exchange e;
    e.frame = id * 10;
    e.response_frame = id * 10 + 1;
    e.request_us = req;
    e.response_us = resp;
    e.api_key = 0;
    e.api_version = 13;
    e.request = produce_request_v13(0x11);
    e.response = produce_response_v13(0x11, recorded_base);
    s.exchanges.push_back(e);
    rec.sessions.push_back(s);
    replay::ExchangeResult r;
    r.session = id;
    r.frame = e.frame;
    r.api_key = 0;
    r.api_version = 13;
    r.api_name = "Produce";
    r.live_sent_us = live_sent;
    r.outcome = recorded_base == live_base && !error_too ? replay::Outcome::Same : replay::Outcome::Regression;
    if (recorded_base != live_base)
      r.differences.push_back({"body.responses[0].partitionResponses[0].baseOffset", std::to_string(recorded_base),
                               std::to_string(live_base), "", false});
    if (error_too) r.differences.push_back({"body.responses[0].partitionResponses[0].errorCode", "0", "10", "", false});
    result.exchanges.push_back(r);
  }
  replay::Outcome outcome(uint32_t session) const {
    for (const auto& r : result.exchanges)
      if (r.session == session) return r.outcome;
    return replay::Outcome::Skipped;
  }
  const replay::ExchangeResult& of(uint32_t session) const {
    for (const auto& r : result.exchanges)
      if (r.session == session) return r;
    return result.exchanges.front();
  }
};

TEST(ReplayRaces, PartitionsOfRequestsAndDifferencePathsByTopicIdOrName) {
  FrameDecoder d(rps());
  Frame f;
  const auto req = produce_request_v13(0x11);   // outlives f
  d.decode_request(req, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  auto tps = replay::request_partitions(rps(), f, orders_by_id);
  ASSERT_EQ(tps.size(), 1u);
  EXPECT_EQ(tps[0].str(), "orders-0");
  const auto resp = produce_response_v13(0x11, 5);   // outlives f
  d.decode_response(resp, 0, 13, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  replay::TopicPartition tp;
  ASSERT_TRUE(replay::topic_partition_at(rps(), f, nullptr, "body.responses[0].partitionResponses[0].baseOffset",
                                         orders_by_id, tp));
  EXPECT_EQ(tp.topic, "orders");
  EXPECT_EQ(tp.partition, 0);
  EXPECT_FALSE(replay::topic_partition_at(rps(), f, nullptr, "body.throttleTimeMs", orders_by_id, tp));
  // An id that the capture never named is shown as an id.
  ASSERT_TRUE(replay::topic_partition_at(rps(), f, nullptr, "body.responses[0].partitionResponses[0].baseOffset",
                                         [](std::string_view) { return std::string(); }, tp));
  EXPECT_EQ(tp.topic, "topic id " + std::string("ERERERERERERERERERER") + "EQ");  // Kafka's base64 text of 16 x 0x11
}

TEST(ReplayRaces, ConcurrentProducersGetEachOthersOffsetsAndThatIsARace) {
  RaceCase c;
  // Sessions 1 and 2 append to orders-0 with overlapping windows (1.000-1.004 s
  // and 1.001-1.003 s): the capture does not fix their order, and the target
  // took 2 first (sent 0.4 ms after the start, 1 at 0.5 ms): they swap 10 and 11.
  c.produce(1, 1'000'000, 1'004'000, 500, 10, 11);
  c.produce(2, 1'001'000, 1'003'000, 400, 11, 10);
  // Session 3 appends later, after both answers (2.000 s): the capture fixes
  // its order; an offset one higher than recorded is a regression.
  c.produce(3, 2'000'000, 2'001'000, 1'000'500, 12, 13);
  // Session 4 overlaps 1 but also fails: an error code is no race.
  c.produce(4, 1'002'000, 1'003'500, 450, 12, 12, true);
  replay::classify_races(rps(), c.rec, orders_by_id, c.result);
  EXPECT_EQ(c.outcome(1), replay::Outcome::Race);
  EXPECT_EQ(c.outcome(2), replay::Outcome::Race);
  EXPECT_EQ(c.outcome(3), replay::Outcome::Regression);
  EXPECT_EQ(c.outcome(4), replay::Outcome::Regression);
  const auto& r1 = c.of(1);
  ASSERT_EQ(r1.races.size(), 1u);
  EXPECT_EQ(r1.races[0].session, 2u);   // the nearest other write: 1 ms away (session 4 is 2 ms)
  EXPECT_EQ(r1.races[0].frame, 20u);
  EXPECT_EQ(r1.races[0].partition, "orders-0");
  EXPECT_EQ(r1.races[0].api, "Produce v13");
  EXPECT_DOUBLE_EQ(r1.races[0].recorded_ms, 0.0);
  EXPECT_DOUBLE_EQ(r1.races[0].other_recorded_ms, 1.0);
  EXPECT_DOUBLE_EQ(r1.races[0].recorded_response_ms, 4.0);
  EXPECT_DOUBLE_EQ(r1.races[0].other_recorded_response_ms, 3.0);
  EXPECT_DOUBLE_EQ(r1.races[0].live_ms, 0.5);
  EXPECT_DOUBLE_EQ(r1.races[0].other_live_ms, 0.4);
  EXPECT_TRUE(r1.races[0].order_not_fixed);
  EXPECT_TRUE(r1.races[0].live_order_differs);
  EXPECT_NE(r1.note.find("orders-0 with session 2 frame 20 Produce v13"), std::string::npos) << r1.note;
  EXPECT_EQ(c.of(2).races.at(0).session, 1u);  // 1 and 4 are both 1 ms away: the first one
  // Races count apart from regressions, in every report, and are no JUnit failure.
  const replay::Totals t = replay::totals(c.result);
  EXPECT_EQ(t.races, 2u);
  EXPECT_EQ(t.regressions, 2u);
  c.result.sessions = {{1, "a", "b", "t", "p1", "", 0}, {2, "c", "b", "t", "p2", "", 0}};
  std::ostringstream text, json, junit;
  replay::write_text_report(text, c.result, {"cap", "t", "fast", 10});
  replay::write_json_report(json, c.result, {"cap", "t", "fast", 10});
  replay::write_junit_report(junit, c.result, {"cap", "t", "fast", 10});
  EXPECT_NE(text.str().find("2 regressions, 0 unanswered, 2 races"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("with session 2 frame 20 Produce v13 on orders-0: recorded 0.000 ms (this) and 1.000 ms, "
                            "order not fixed by the capture; live 0.500 and 0.400 ms, the other order"),
            std::string::npos)
      << text.str();
  EXPECT_NE(json.str().find("\"races\":2,"), std::string::npos);
  EXPECT_NE(json.str().find("\"with\":[{\"session\":2,\"frame\":20,\"api\":\"Produce v13\",\"partition\":\"orders-0\""),
            std::string::npos)
      << json.str();
  // Sessions 1 and 2 had races only: no failure, the races in system-out.
  EXPECT_NE(junit.str().find("failures=\"0\""), std::string::npos) << junit.str();
  EXPECT_NE(junit.str().find("<system-out>race: frame 10 Produce v13 on orders-0"), std::string::npos) << junit.str();
}

TEST(ReplayRaces, OrderFixedByTheCaptureButReversedLiveIsARaceTooKeptOrderIsNot) {
  // Windows apart (1.000-1.001 s, 1.002-1.003 s): the capture fixes 5 before 6.
  RaceCase kept;
  kept.produce(5, 1'000'000, 1'001'000, 100, 7, 8);
  kept.produce(6, 1'002'000, 1'003'000, 200, 8, 7);
  replay::classify_races(rps(), kept.rec, orders_by_id, kept.result);
  EXPECT_EQ(kept.outcome(5), replay::Outcome::Regression);
  EXPECT_EQ(kept.outcome(6), replay::Outcome::Regression);
  RaceCase reversed;   // the target got 6 first
  reversed.produce(5, 1'000'000, 1'001'000, 300, 7, 8);
  reversed.produce(6, 1'002'000, 1'003'000, 200, 8, 7);
  replay::classify_races(rps(), reversed.rec, orders_by_id, reversed.result);
  EXPECT_EQ(reversed.outcome(5), replay::Outcome::Race);
  ASSERT_EQ(reversed.of(5).races.size(), 1u);
  EXPECT_FALSE(reversed.of(5).races[0].order_not_fixed);
  EXPECT_TRUE(reversed.of(5).races[0].live_order_differs);
  // Two requests of one session never race each other.
  RaceCase one;
  one.produce(7, 1'000'000, 1'004'000, 100, 7, 8);
  one.rec.sessions[0].exchanges.push_back(one.rec.sessions[0].exchanges[0]);
  one.result.exchanges.push_back(one.result.exchanges[0]);
  one.result.exchanges[1].index = 1;
  replay::classify_races(rps(), one.rec, orders_by_id, one.result);
  EXPECT_EQ(one.result.exchanges[0].outcome, replay::Outcome::Regression);
}

// SyncGroup v5 of group "classic-app" at generation 2, and its answer: the
// member's assignment, or REBALANCE_IN_PROGRESS (27) with none.
std::vector<uint8_t> sync_request_v5(const std::string& member) {
  Bytes b = test::request_header_v2(14, 5, 7);
  b.cstr("classic-app").i32(2).cstr(member).cnull().cstr("consumer").cstr("cooperative-sticky").carr(0).tags0();
  return b.message();
}
std::vector<uint8_t> sync_response_v5(int error) {
  Bytes b;
  b.i32(7).tags0().i32(0).i16(error);
  // A ConsumerProtocolAssignment v3 of no partitions and null user data.
  const std::vector<uint8_t> assignment = {0, 3, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, none;
  if (error) b.cnull().cnull().cbytes(none);
  else b.cstr("consumer").cstr("cooperative-sticky").cbytes(assignment);
  b.tags0();
  return b.message();
}

// A recorded exchange: its request's frame, api, both messages and the
// window (us) between the request and the response.
replay::Exchange recorded_exchange(uint64_t frame, int16_t api, int16_t version, std::vector<uint8_t> request,
                                   std::vector<uint8_t> response, int64_t req, int64_t resp) {
  replay::Exchange e;
  e.frame = frame;
  e.request_us = req;
  e.response_us = resp;
  e.api_key = api;
  e.api_version = version;
  e.request = std::move(request);
  e.response = std::move(response);
  return e;
}

TEST(ReplayRaces, ARebalanceAnotherMemberStartedFirstIsARaceOnTheGroup) {
  replay::Recording rec;
  replay::ReplayResult result;
  // Session `id` sends one request, recorded in the window [req, resp] (us),
  // sent live at `live` us; its differences as the comparison found them.
  auto add = [&](uint32_t id, int16_t api, int16_t version, const char* name, std::vector<uint8_t> request,
                 std::vector<uint8_t> response, int64_t req, int64_t resp, int64_t live,
                 std::vector<replay::Difference> diffs) {
    replay::RecordedSession s;
    s.id = id;
    const replay::Exchange& e =
        s.exchanges.emplace_back(recorded_exchange(id * 10, api, version, std::move(request), std::move(response), req, resp));
    rec.sessions.push_back(s);
    replay::ExchangeResult r;
    r.session = id;
    r.frame = e.frame;
    r.api_key = api;
    r.api_version = version;
    r.api_name = name;
    r.live_sent_us = live;
    r.outcome = diffs.empty() ? replay::Outcome::Same : replay::Outcome::Regression;
    r.differences = std::move(diffs);
    result.exchanges.push_back(r);
  };
  const std::string a = "consumer-classic-app-1-0f1e2d3c", b = "consumer-classic-app-2-aabbccdd";
  // Member a rejoins (7.072-7.137 s, as in captures/classic-consumer.pcapng); member
  // b's SyncGroup (7.130-7.132 s) came after it there and was told
  // REBALANCE_IN_PROGRESS; live it came first (sent at 0.2 ms, a's join at 0.3
  // ms) and got its assignment.
  add(1, 11, 9, "JoinGroup", join_request(a), join_response(3, a, a, {a, b}), 7'072'000, 7'137'000, 300, {});
  const std::vector<replay::Difference> rebalanced = {
      {"body.errorCode", "27", "0", "", false, "REBALANCE_IN_PROGRESS", "NONE"},
      {"body.protocolType", "null", "\"consumer\"", "", false},
      {"body.assignment", "\"\"", "\"AAMAAAAA/////w==\"", "", false}};
  add(2, 14, 5, "SyncGroup", sync_request_v5(b), sync_response_v5(27), 7'130'000, 7'132'000, 200, rebalanced);
  // The same difference later, after a's join was answered in the capture and
  // sent after it live: the order is fixed, so it is a regression.
  add(3, 14, 5, "SyncGroup", sync_request_v5(b), sync_response_v5(27), 7'500'000, 7'502'000, 900, rebalanced);
  // Overlapping a's join, but the error is another one: no rebalance explains it.
  add(4, 14, 5, "SyncGroup", sync_request_v5(b), sync_response_v5(0), 7'131'000, 7'133'000, 250,
      {{"body.errorCode", "0", "25", "", false, "NONE", "UNKNOWN_MEMBER_ID"}});
  replay::classify_races(rps(), rec, orders_by_id, result);
  ASSERT_EQ(result.exchanges.size(), 4u);
  EXPECT_EQ(result.exchanges[0].outcome, replay::Outcome::Same);
  const auto& r2 = result.exchanges[1];
  EXPECT_EQ(r2.outcome, replay::Outcome::Race);
  ASSERT_EQ(r2.races.size(), 1u);
  EXPECT_EQ(r2.races[0].session, 1u);
  EXPECT_EQ(r2.races[0].frame, 10u);
  EXPECT_EQ(r2.races[0].api, "JoinGroup v9");
  EXPECT_EQ(r2.races[0].partition, "group classic-app");
  EXPECT_TRUE(r2.races[0].order_not_fixed);
  EXPECT_TRUE(r2.races[0].live_order_differs);
  EXPECT_DOUBLE_EQ(r2.races[0].recorded_ms, 58.0);   // 7.130 s after the first request at 7.072 s
  EXPECT_EQ(result.exchanges[2].outcome, replay::Outcome::Regression);
  EXPECT_TRUE(result.exchanges[2].races.empty());
  EXPECT_EQ(result.exchanges[3].outcome, replay::Outcome::Regression);
}

// ShareFetch v2 of group "share-app" at session epoch `epoch`: the session's
// first fetch names partition 0 of the topic with id 0x11 ("orders"), a later
// one (epoch > 0) names nothing, as a share session does once it is open.
std::vector<uint8_t> share_fetch_v2(int epoch) {
  Bytes b = test::request_header_v2(78, 2, 20 + epoch, "kwire-share-a");
  b.cstr("share-app").cstr("GcQmOjwkQLumTFN9aUCIUA").i32(epoch)   // GroupId, MemberId, ShareSessionEpoch
      .i32(500).i32(1).i32(52428800).i32(500).i32(500)             // MaxWaitMs, MinBytes, MaxBytes, MaxRecords, BatchSize
      .i8(0).boolean(false);                                       // ShareAcquireMode, IsRenewAck
  if (epoch == 0) b.carr(1).uuid(0x11).carr(1).i32(0).carr(0).tags0().tags0();   // Topics: orders, partition 0, no acks
  else b.carr(0);
  b.carr(0).tags0();   // ForgottenTopicsData
  return b.message();
}
// Its answer with no records: no topic at all.
std::vector<uint8_t> share_fetch_response_v2_empty() {
  Bytes b;
  b.i32(20).tags0();
  b.i32(0).i16(0).cnull().i32(30000).carr(0).carr(0).tags0();   // Throttle, Error, Message, LockTimeout, Responses, NodeEndpoints
  return b.message();
}

TEST(ReplayRaces, RecordsALongPolledShareFetchGotOnlyLiveCameFromTheWriteItWaitedFor) {
  replay::Recording rec;
  replay::ReplayResult result;
  const auto exchange = recorded_exchange;
  auto answered = [&](uint32_t session, uint32_t index, const replay::Exchange& e, const char* name, int64_t live,
                      std::vector<replay::Difference> diffs) {
    replay::ExchangeResult r;
    r.session = session;
    r.index = index;
    r.frame = e.frame;
    r.api_key = e.api_key;
    r.api_version = e.api_version;
    r.api_name = name;
    r.live_sent_us = live;
    r.outcome = diffs.empty() ? replay::Outcome::Same : replay::Outcome::Regression;
    r.differences = std::move(diffs);
    result.exchanges.push_back(r);
  };
  // The share consumer's session: its opening fetch (1.000-1.010 s), then two
  // long polls that the capture shows ending empty after their 500 ms; live,
  // each came back with a topic the recorded answer lacks.
  replay::RecordedSession consumer;
  consumer.id = 1;
  consumer.exchanges.push_back(exchange(10, 78, 2, share_fetch_v2(0), share_fetch_response_v2_empty(), 1'000'000, 1'010'000));
  consumer.exchanges.push_back(exchange(12, 78, 2, share_fetch_v2(1), share_fetch_response_v2_empty(), 1'010'000, 1'510'000));
  consumer.exchanges.push_back(exchange(14, 78, 2, share_fetch_v2(2), share_fetch_response_v2_empty(), 3'000'000, 3'500'000));
  rec.sessions.push_back(consumer);
  // A producer's write to orders-0 at 1.200 s, while the first long poll waited.
  replay::RecordedSession producer;
  producer.id = 2;
  producer.exchanges.push_back(exchange(20, 0, 13, produce_request_v13(0x11), produce_response_v13(0x11, 0), 1'200'000, 1'203'000));
  rec.sessions.push_back(producer);
  const std::vector<replay::Difference> got_records = {
      {"body.responses[+0]", "", "{\"topicId\":\"ERERERERERERERERERERE\",\"partitions\":[]}", "", false}};
  answered(1, 0, consumer.exchanges[0], "ShareFetch", 100, {});
  answered(1, 1, consumer.exchanges[1], "ShareFetch", 10'000, got_records);
  answered(1, 2, consumer.exchanges[2], "ShareFetch", 2'000'000, got_records);
  answered(2, 0, producer.exchanges[0], "Produce", 200'000, {});
  replay::classify_races(rps(), rec, orders_by_id, result);
  // The first long poll's topic is the one its session opened with: the write
  // raced it (the capture does not fix which came first).
  const auto& raced = result.exchanges[1];
  EXPECT_EQ(raced.outcome, replay::Outcome::Race);
  ASSERT_EQ(raced.races.size(), 1u);
  EXPECT_EQ(raced.races[0].session, 2u);
  EXPECT_EQ(raced.races[0].partition, "orders-0");
  EXPECT_TRUE(raced.races[0].order_not_fixed);
  // Nothing was written while the second one waited: a regression.
  EXPECT_EQ(result.exchanges[2].outcome, replay::Outcome::Regression);
  EXPECT_TRUE(result.exchanges[2].races.empty());
}

// MetadataResponse v12: the given topics (by name, id 0x22..), the given brokers.
std::vector<uint8_t> metadata_v12(const std::vector<std::string>& topics,
                                  const std::vector<std::tuple<int, std::string, int>>& brokers = {}) {
  Bytes b;
  b.i32(3).tags0();
  b.i32(0).carr(brokers.size());
  for (const auto& [id, host, port] : brokers) b.i32(id).cstr(host).i32(port).cnull().tags0();
  b.cstr("cluster-x").i32(1).carr(topics.size());
  uint8_t fill = 0x22;
  for (const auto& t : topics) b.i16(0).cstr(t).uuid(fill++).i8(0).carr(0).i32(-2147483648).tags0();
  b.tags0();
  return b.message();
}

// CreateTopicsRequest v7: one topic, one partition.
std::vector<uint8_t> create_topics_v7(const std::string& topic) {
  Bytes b = test::request_header_v2(19, 7, 4);
  b.carr(1).cstr(topic).i32(1).i16(-1).carr(0).carr(0).tags0().i32(30000).boolean(false).tags0();
  return b.message();
}

TEST(ReplayLag, AReadIsRetriedOnlyWhenAnAdminWriteExplainsEveryDifference) {
  FrameDecoder d(rps());
  Frame req, rec, live;
  const auto create = create_topics_v7("fresh");   // outlives req
  d.decode_request(create, req);
  ASSERT_TRUE(req.ok()) << req.errors.front().reason;
  EXPECT_EQ(replay::written_topics(rps(), req, Frame{}), (std::set<std::string>{"fresh"}));
  EXPECT_TRUE(replay::is_lagging_read("Metadata"));
  EXPECT_TRUE(replay::is_admin_write("DeleteTopics"));
  EXPECT_FALSE(replay::is_lagging_read("Produce"));

  // The recording lists "fresh" next to "orders"; the target does not know "fresh" yet.
  const auto rec_b = metadata_v12({"orders", "fresh"}), live_b = metadata_v12({"orders"});
  d.decode_response(rec_b, 3, 12, rec);
  d.decode_response(live_b, 3, 12, live);
  ASSERT_TRUE(rec.ok() && live.ok());
  replay::CompareOptions o;
  o.ignore = replay::default_ignore_rules();
  std::vector<replay::Difference> diffs;
  replay::compare(rps(), rec, live, o, diffs);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].path, "body.topics[1]");
  EXPECT_TRUE(replay::lag_explains(rps(), rec, live, diffs, {"fresh"}, {}));
  EXPECT_FALSE(replay::lag_explains(rps(), rec, live, diffs, {"other"}, {}));
  EXPECT_FALSE(replay::lag_explains(rps(), rec, live, {}, {"fresh"}, {}));  // nothing to explain

  // After DeleteTopics the target still lists "gone": an element of the live side only.
  const auto rec2 = metadata_v12({"orders"}), live2 = metadata_v12({"orders", "gone"});
  d.decode_response(rec2, 3, 12, rec);
  d.decode_response(live2, 3, 12, live);
  diffs.clear();
  replay::compare(rps(), rec, live, o, diffs);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].path, "body.topics[+1]");
  EXPECT_TRUE(replay::lag_explains(rps(), rec, live, diffs, {"gone"}, {}));

  // A difference outside the topic (another cluster id) is not lag.
  d.decode_response(rec_b, 3, 12, rec);
  const auto other = metadata_v12({"orders"});
  d.decode_response(other, 3, 12, live);
  diffs.clear();
  replay::compare(rps(), rec, live, o, diffs);
  diffs.push_back({"body.clusterId", "\"cluster-x\"", "\"cluster-y\"", "", false});
  EXPECT_FALSE(replay::lag_explains(rps(), rec, live, diffs, {"fresh"}, {}));
}

TEST(ReplayEndpoints, RecordedAddressesMapToTheTargetsExactlyOrByPort) {
  replay::EndpointMap m;
  m.add("127.0.0.1:53769", "127.0.0.1:44977");
  m.add("kafka-a:9092", "127.0.0.1:41000");
  const auto ports = m.ports();
  EXPECT_EQ(ports.at(53769), 44977);
  EXPECT_EQ(replay::map_endpoints("PLAINTEXT://127.0.0.1:53769", m, ports), "PLAINTEXT://127.0.0.1:44977");
  // By port alone: the host as written stays (and is compared).
  EXPECT_EQ(replay::map_endpoints("PLAINTEXT://localhost:53769,EXTERNAL://:53769", m, ports),
            "PLAINTEXT://localhost:44977,EXTERNAL://:44977");
  EXPECT_EQ(replay::map_endpoints("INTERNAL://kafka-a:9092", m, ports), "INTERNAL://127.0.0.1:41000");
  // A port that maps to nothing stays as recorded.
  EXPECT_EQ(replay::map_endpoints("CONTROLLER://[::1]:35379", m, ports), "CONTROLLER://[::1]:35379");
  EXPECT_EQ(replay::map_endpoints("1@127.0.0.1:53769", m, ports), "1@127.0.0.1:44977");
  // The host as the broker writes it, or as kwire reaches it; the port must map.
  replay::EndpointMap named;
  named.add("127.0.0.1:53769", "localhost:44977");
  EXPECT_TRUE(replay::endpoints_match("PLAINTEXT://127.0.0.1:53769", "PLAINTEXT://127.0.0.1:44977", named, named.ports()));
  EXPECT_TRUE(replay::endpoints_match("PLAINTEXT://127.0.0.1:53769", "PLAINTEXT://localhost:44977", named, named.ports()));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://127.0.0.1:53769", "PLAINTEXT://10.0.0.9:44977", named, named.ports()));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://127.0.0.1:53769", "PLAINTEXT://127.0.0.1:44978", named, named.ports()));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://127.0.0.1:53769", "SSL://127.0.0.1:44977", named, named.ports()));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://127.0.0.1:53769", "PLAINTEXT://127.0.0.1:44977,SSL://:1", named,
                                       named.ports()));
  // Two recorded brokers on one port (other hosts): the port alone says nothing.
  replay::EndpointMap two;
  two.add("10.0.0.1:9092", "127.0.0.1:1001");
  two.add("10.0.0.2:9092", "127.0.0.1:1002");
  EXPECT_TRUE(two.ports().empty());
  // A cluster on one port (captures/cluster.pcapng: 127.0.0.11-13, client port 60287,
  // controller port 37365) into one on other addresses: the controller listener moves
  // with its broker's host, its port by the listener's name.
  replay::EndpointMap cluster;
  for (int n = 1; n <= 3; ++n) cluster.add("127.0.0.1" + std::to_string(n) + ":60287", "127.0.0.2" + std::to_string(n) + ":37047");
  auto cp = cluster.ports();
  EXPECT_EQ(cp, (std::map<uint16_t, uint16_t>{{60287, 37047}}));
  EXPECT_EQ(cluster.hosts().at("127.0.0.12"), "127.0.0.22");
  replay::listener_ports({{"listeners", "PLAINTEXT://127.0.0.11:60287,CONTROLLER://127.0.0.11:37365"}},
                         {{"listeners", "PLAINTEXT://127.0.0.21:37047,CONTROLLER://127.0.0.21:39825"}}, cp);
  EXPECT_EQ(replay::map_endpoints("127.0.0.11:37365,127.0.0.12:37365,127.0.0.13:37365", cluster, cp),
            "127.0.0.21:39825,127.0.0.22:39825,127.0.0.23:39825");
  EXPECT_TRUE(replay::endpoints_match("PLAINTEXT://127.0.0.11:60287,CONTROLLER://127.0.0.11:37365",
                                      "PLAINTEXT://127.0.0.21:37047,CONTROLLER://127.0.0.21:39825", cluster, cp));
  EXPECT_FALSE(replay::endpoints_match("PLAINTEXT://127.0.0.11:60287,CONTROLLER://127.0.0.11:37365",
                                       "PLAINTEXT://127.0.0.21:37047,CONTROLLER://127.0.0.22:39825", cluster, cp));
  // A recorded host whose addresses went to two live hosts maps no host.
  replay::EndpointMap split;
  split.add("10.0.0.1:9092", "127.0.0.1:1001");
  split.add("10.0.0.1:9093", "127.0.0.2:1001");
  EXPECT_TRUE(split.hosts().empty());

  // Listeners no connection of the capture reached (the controller's): by name, from the
  // listeners of both answers; the one the sessions went to keeps its mapping.
  std::map<uint16_t, uint16_t> p{{53769, 44977}};
  replay::listener_ports({{"listeners", "PLAINTEXT://:53769,CONTROLLER://:35379"}, {"controller.listener.names", "CONTROLLER"}},
                         {{"listeners", "PLAINTEXT://:44977,CONTROLLER://:48071"}}, p);
  EXPECT_EQ(p, (std::map<uint16_t, uint16_t>{{53769, 44977}, {35379, 48071}}));
  // A broker with four listeners, reached on its SSL one only (the recorded broker's
  // SSL 42703 is the target's SSL 57561): PLAINTEXT, CONTROLLER and SASL_SSL by name.
  p = {{42703, 57561}};
  replay::listener_ports({{"listeners", "PLAINTEXT://127.0.0.1:38713,CONTROLLER://127.0.0.1:59323,"
                                        "SSL://127.0.0.1:42703,SASL_SSL://127.0.0.1:55005"}},
                         {{"listeners", "PLAINTEXT://127.0.0.1:33861,CONTROLLER://127.0.0.1:33577,"
                                        "SSL://127.0.0.1:57561,SASL_SSL://127.0.0.1:44327"}},
                         p);
  EXPECT_EQ(p, (std::map<uint16_t, uint16_t>{{38713, 33861}, {59323, 33577}, {42703, 57561}, {55005, 44327}}));
  // A name the target lacks maps to nothing; a target port that already stands for
  // another recorded address is not taken again (the sessions went to 53770, which the
  // target's PLAINTEXT 44977 stands for: the recorded PLAINTEXT 53769 is another).
  p = {{53770, 44977}};
  replay::listener_ports({{"listeners", "PLAINTEXT://:53769,INTERNAL://:35000,CONTROLLER://:35379"}},
                         {{"listeners", "PLAINTEXT://:44977,EXTERNAL://:45000,CONTROLLER://:48071"}}, p);
  EXPECT_EQ(p, (std::map<uint16_t, uint16_t>{{53770, 44977}, {35379, 48071}}));
  // Without `listeners` in either answer: nothing to pair.
  p.clear();
  replay::listener_ports({{"advertised.listeners", "PLAINTEXT://localhost:53769"}}, {{"listeners", "PLAINTEXT://:1"}}, p);
  EXPECT_TRUE(p.empty());
}

TEST(ReplayEndpoints, NodeEndpointsOfMetadataPairByNodeId) {
  FrameDecoder d(rps());
  Frame rec, live;
  const auto rec_b = metadata_v12({}, {{1, "localhost", 53769}, {2, "localhost", 53770}});
  const auto live_b = metadata_v12({}, {{2, "127.0.0.1", 40002}, {1, "127.0.0.1", 40001}});
  d.decode_response(rec_b, 3, 12, rec);
  d.decode_response(live_b, 3, 12, live);
  ASSERT_TRUE(rec.ok() && live.ok());
  replay::EndpointMap m;
  replay::learn_node_endpoints(rps(), rec, live, m);
  EXPECT_EQ(m.addresses, (std::map<std::string, std::string>{{"localhost:53769", "127.0.0.1:40001"},
                                                              {"localhost:53770", "127.0.0.1:40002"}}));
}

}  // namespace
}  // namespace kwire
