// Where replay sends a request in a cluster (replay/routing.hpp), held to
// what Kafka's own specs say (their listeners and entity types), and which
// requests are a broker's own, on requests whose bytes are worked out here by
// hand from the specs.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "dissector/protocol/decoder.hpp"
#include "dissector/spec/spec_model.hpp"
#include "replay/cluster.hpp"
#include "replay/routing.hpp"
#include "replay/split.hpp"
#include "wire/wire.hpp"
#include "wire/message_builder.hpp"

namespace kwire::replay {
namespace {

const ProgramSet& ps() { return ProgramSet::release(); }

std::map<std::string, spec::MessageSpec> request_specs() {
  std::map<std::string, spec::MessageSpec> out;
  auto r = spec::load_spec_dir(std::string(KWIRE_SOURCE_DIR) + "/specs/kafka");
  for (auto& m : r.messages)
    if (m.type == "request") out[m.name.substr(0, m.name.size() - 7)] = m;  // "...Request"
  return out;
}

bool has_listener(const spec::MessageSpec& m, const std::string& l) {
  return std::find(m.listeners.begin(), m.listeners.end(), l) != m.listeners.end();
}

// The spec's listeners decide who the controller's RPCs are: an api no broker
// listens for (or the ZooKeeper-era ones that name no listener) is the
// controller's, every other one is sent to a broker.
TEST(Routing, ControllerRpcsAreThoseNoBrokerListensFor) {
  const auto specs = request_specs();
  ASSERT_GT(specs.size(), 80u);
  size_t controller = 0, checked = 0;
  for (const auto& m : ps().messages()) {
    if (m.direction != Direction::Request || m.older) continue;
    auto it = specs.find(std::string(m.api_name));
    ASSERT_NE(it, specs.end()) << m.api_name;
    const bool broker = has_listener(it->second, "broker");
    EXPECT_EQ(role_of(m) == Role::Controller, !broker) << m.api_name << " v" << m.version;
    controller += !broker;
    ++checked;
  }
  EXPECT_GT(checked, 300u);
  EXPECT_GT(controller, 10u);
}

// A request whose top-level fields name a group goes to the group's
// coordinator, one that names a transactional id to the transaction's,
// except where the api says otherwise (the reason is given for each).
TEST(Routing, CoordinatorRolesFollowTheEntitiesARequestNames) {
  const std::map<std::string, std::pair<Role, std::string>> exceptions = {
      {"Produce", {Role::PartitionLeader, "a transactional write goes to the partition's leader"}},
      {"ShareFetch", {Role::PartitionLeader, "share consumers fetch from the leaders"}},
      {"ShareAcknowledge", {Role::PartitionLeader, "acknowledged where fetched"}},
      {"AddOffsetsToTxn", {Role::TxnCoordinator, "names the group, asks the transaction coordinator"}},
      {"TxnOffsetCommit", {Role::GroupCoordinator, "names the transaction, commits at the group coordinator"}},
  };
  size_t groups = 0, txns = 0;
  for (const auto& [api, m] : request_specs()) {
    bool group = false, txn = false;
    for (const auto& f : m.fields) {
      group |= f.entity == "groupId";
      txn |= f.entity == "transactionalId";
    }
    if (!group && !txn) continue;
    if (auto e = exceptions.find(api); e != exceptions.end()) {
      EXPECT_EQ(role_of(api), e->second.first) << api << ": " << e->second.second;
      continue;
    }
    if (txn) {
      EXPECT_EQ(role_of(api), Role::TxnCoordinator) << api;
      ++txns;
    } else {
      EXPECT_EQ(role_of(api), Role::GroupCoordinator) << api;
      ++groups;
    }
  }
  EXPECT_GE(groups, 18u);  // the classic, consumer, share and streams group apis
  EXPECT_GE(txns, 4u);
  // The groups a share coordinator keeps state for are named too, but by
  // share-partition leaders, never by clients.
  for (const char* api : {"InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
                          "DeleteShareGroupState", "ReadShareGroupStateSummary"})
    EXPECT_EQ(role_of(api), Role::ShareCoordinator) << api;
}

// Header v1 (api key, version, correlation id, client id) or v2 (and an empty
// tag section), as the specs give them.
wire::MessageBuilder header(int api, int version, bool flexible, const char* client) {
  wire::MessageBuilder b;
  b.i16(api).i16(version).i32(7).str(client);
  if (flexible) b.tags0();
  return b;
}

// A decoded request with the bytes its frame points into (frames are zero copy).
struct Decoded {
  std::vector<uint8_t> bytes;
  Frame f;
};

Decoded decode(const wire::MessageBuilder& b) {
  Decoded d{b.message(), {}};
  FrameDecoder(ps()).decode_request(d.bytes, d.f);
  EXPECT_TRUE(d.f.ok()) << (d.f.errors.empty() ? "" : d.f.errors.front().reason);
  return d;
}

// Fetch v4: ReplicaId, MaxWaitMs, MinBytes, MaxBytes, IsolationLevel, Topics (none).
Decoded fetch_v4(int replica) {
  auto b = header(1, 4, false, "c");
  b.i32(replica).i32(500).i32(1).i32(1 << 20).i8(0).i32(0);
  return decode(b);
}

// Fetch v15+: ReplicaId is gone from the body; a follower sends the tagged
// ReplicaState (tag 1: ReplicaId int32, ReplicaEpoch int64, no tags), a
// consumer leaves it out.
Decoded fetch_flexible(int version, int replica, bool with_state) {
  auto b = header(1, version, true, "c");
  b.i32(500).i32(1).i32(1 << 20).i8(0).i32(0).i32(-1);  // MaxWaitMs .. SessionEpoch
  b.carr(0).carr(0).cstr("");                          // Topics, ForgottenTopicsData, RackId
  if (with_state) {
    b.uvarint(1).uvarint(1).uvarint(13).i32(replica).i64(42).tags0();
  } else {
    b.tags0();
  }
  return decode(b);
}

TEST(Routing, AFollowersFetchIsABrokersOwn) {
  const struct {
    Decoded d;
    std::string kind;
  } cases[] = {
      {fetch_v4(-1), ""},
      {fetch_v4(2), "replica fetch"},
      {fetch_v4(0), "replica fetch"},
      {fetch_flexible(15, 3, true), "replica fetch"},
      {fetch_flexible(17, 1, true), "replica fetch"},
      {fetch_flexible(17, -1, true), ""},
      {fetch_flexible(17, 0, false), ""},
  };
  for (const auto& c : cases) {
    const BrokerTraffic b = broker_traffic(c.d.f, ps());
    EXPECT_EQ(b.kind, c.kind) << "Fetch v" << c.d.f.api_version << " " << b.detail;
    EXPECT_EQ(role_of(c.d.f, ps()), Role::PartitionLeader);
  }
  EXPECT_EQ(broker_traffic(fetch_v4(2).f, ps()).detail, "Fetch v4 with replica id 2");
  EXPECT_EQ(broker_traffic(fetch_flexible(15, 3, true).f, ps()).detail, "Fetch v15 with replica id 3");
}

// InitProducerId v0: TransactionalId (nullable string), TransactionTimeoutMs.
TEST(Routing, AnIdempotentProducersIdComesFromAnyBroker) {
  auto idempotent = header(22, 0, false, "p");
  idempotent.i16(-1).i32(60000);
  auto transactional = header(22, 0, false, "p");
  transactional.str("txn-1").i32(60000);
  EXPECT_EQ(role_of(decode(idempotent).f, ps()), Role::AnyBroker);
  EXPECT_EQ(role_of(decode(transactional).f, ps()), Role::TxnCoordinator);
  EXPECT_FALSE(broker_traffic(decode(transactional).f, ps()));
}

// WriteTxnMarkers v0 (Markers: none) and AddPartitionsToTxn v4 (Transactions:
// none; v4 is flexible): what a transaction coordinator and a partition leader
// send each other.
TEST(Routing, TransactionMarkersAndVerificationAreBrokersOwn) {
  auto markers = header(27, 0, false, "broker-1");
  markers.i32(0);
  EXPECT_EQ(broker_traffic(decode(markers).f, ps()).kind, "transaction marker");
  auto verify = header(24, 4, true, "broker-1");
  verify.carr(0).tags0();
  EXPECT_EQ(broker_traffic(decode(verify).f, ps()).kind, "transaction verification");
  // v3 and below: a transactional producer's own (TransactionalId, ProducerId,
  // ProducerEpoch, Topics: none; flexible from v3).
  auto client = header(24, 3, true, "p");
  client.cstr("txn-1").i64(5).i16(0).carr(0).tags0();
  EXPECT_FALSE(broker_traffic(decode(client).f, ps()));
  EXPECT_EQ(role_of(decode(client).f, ps()), Role::TxnCoordinator);
}

// FindCoordinator v6 (flexible): KeyType, CoordinatorKeys. Key type 2 finds a
// share partition's share coordinator, which only a share-partition leader
// asks for (its "group:topicId:partition" key); clients of share groups ask
// for the group coordinator (key type 0).
TEST(Routing, ShareCoordinatorLookupsAreBrokersOwn) {
  auto persister = header(10, 6, true, "Persister-client-5");
  persister.i8(2).carr(1).cstr("prod-fulfilment:eGL5kjqRTQCkChLoakmtqg:1").tags0();
  const BrokerTraffic b = broker_traffic(decode(persister).f, ps());
  EXPECT_EQ(b.kind, "share state");
  EXPECT_EQ(b.detail, "FindCoordinator v6 with key type 2 (a share coordinator)");
  for (int type : {0, 1}) {
    auto client = header(10, 6, true, "consumer");
    client.i8(type).carr(1).cstr("g").tags0();
    EXPECT_FALSE(broker_traffic(decode(client).f, ps())) << type;
  }
}

TEST(Routing, EveryKindIsNamedOnce) {
  std::set<std::string_view> kinds(broker_traffic_kinds().begin(), broker_traffic_kinds().end());
  EXPECT_EQ(kinds.size(), broker_traffic_kinds().size());
  for (auto k : {"replica fetch", "controller", "transaction marker", "transaction verification", "share state"})
    EXPECT_TRUE(kinds.count(k)) << k;
}


// Fetch v13 (flexible, topics by id): two topics, the second with two
// partitions, and a forgotten topic that is not fetched.
TEST(Routing, AFetchNamesItsPartitionsByTopicIdAndNotTheForgottenOnes) {
  auto b = header(1, 13, true, "c");
  b.i32(-1).i32(500).i32(1).i32(1 << 20).i8(0).i32(0).i32(-1);  // ReplicaId .. SessionEpoch
  b.carr(2);
  b.uuid(0x11).carr(1).i32(0).i32(-1).i64(5).i32(-1).i64(-1).i32(1 << 20).tags0().tags0();
  b.uuid(0x22).carr(2);
  b.i32(3).i32(-1).i64(0).i32(-1).i64(-1).i32(1 << 20).tags0();
  b.i32(1).i32(-1).i64(0).i32(-1).i64(-1).i32(1 << 20).tags0();
  b.tags0();
  b.carr(1).uuid(0x33).carr(1).i32(9).tags0();  // ForgottenTopicsData
  b.cstr("").tags0();                             // RackId, tags
  const Decoded d = decode(b);
  // An id is named by its text form, the same as a Metadata answer's (ClusterView).
  const auto got = partitions_of(d.f, ps());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].by_id && got[1].by_id && got[2].by_id);
  EXPECT_EQ(got[0].partition, 0);
  EXPECT_EQ(got[1].partition, 3);
  EXPECT_EQ(got[2].partition, 1);
  EXPECT_EQ(got[1].topic, got[2].topic);
  EXPECT_NE(got[0].topic, got[1].topic);
  for (const auto& p : got) EXPECT_EQ(p.topic.find("3333"), std::string::npos) << p.topic;
}

// ListOffsets v9 (by name, PartitionIndex) and DescribeProducers v0 (an array of plain indexes).
// A Fetch answer's partitions are found as its request names them (by topic
// id), so that a partition answered NOT_LEADER_OR_FOLLOWER is known for the one
// sent (Fetch v16 answer, bytes from the spec: ThrottleTimeMs, ErrorCode,
// SessionId, Responses [TopicId, Partitions [PartitionIndex, ErrorCode,
// HighWatermark, LastStableOffset, LogStartOffset, AbortedTransactions,
// PreferredReadReplica, Records]]).
TEST(Routing, FetchAnswersNamePartitionsAsTheirRequests) {
  wire::MessageBuilder b;
  b.i32(7).tags0().i32(0).i16(0).i32(9).carr(1).uuid(0x0102030405060708ULL, 0x090a0b0c0d0e0f10ULL).carr(2);
  for (int p : {3, 1}) b.i32(p).i16(p == 1 ? 6 : 0).i64(10).i64(10).i64(0).cnull().i32(-1).cnull().tags0();
  b.tags0().tags0();
  const auto bytes = b.message();
  Frame f;
  FrameDecoder(ps()).decode_response(bytes, 1, 16, f);
  ASSERT_TRUE(f.ok());
  const auto slots = partition_slots(f, ps());
  ASSERT_EQ(slots.size(), 2u);
  const uint8_t id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  EXPECT_EQ(slots[1].ref, (PartitionRef{wire::uuid_to_string(id), true, 1}));
  const Node* code = find_field(f, ps(), slots[1].element, "ErrorCode");
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->v.i, 6);
}

TEST(Routing, PartitionsByNameAndAsPlainIndexes) {
  auto lo = header(2, 9, true, "c");
  lo.i32(-1).i8(0).carr(1).cstr("orders").carr(2);
  lo.i32(4).i32(-1).i64(-1).tags0();
  lo.i32(2).i32(-1).i64(-2).tags0();
  lo.tags0().tags0();
  const auto a = partitions_of(decode(lo).f, ps());
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], (PartitionRef{"orders", false, 4}));
  EXPECT_EQ(a[1], (PartitionRef{"orders", false, 2}));

  auto dp = header(61, 0, true, "c");
  dp.carr(2).cstr("a").carr(1).i32(7).tags0().cstr("b").carr(2).i32(0).i32(1).tags0().tags0();
  const auto p = partitions_of(decode(dp).f, ps());
  const std::vector<PartitionRef> want = {{"a", false, 7}, {"b", false, 0}, {"b", false, 1}};
  EXPECT_EQ(p, want);
}

// DescribeGroups v5 names several groups (each may have another coordinator);
// TxnOffsetCommit v3 goes to its group's coordinator, not its transaction's.
TEST(Routing, CoordinatorKeysAreTheEntitiesOfTheRole) {
  auto dg = header(15, 5, true, "c");
  dg.carr(3).cstr("g1").cstr("g2").cstr("g1").boolean(false).tags0();
  const std::vector<std::string> groups = {"g1", "g2"};
  EXPECT_EQ(coordinator_keys(decode(dg).f, ps(), Role::GroupCoordinator), groups);

  // TransactionalId, GroupId, ProducerId, ProducerEpoch, GenerationId, MemberId,
  // GroupInstanceId, Topics (none), tags.
  auto toc = header(28, 3, true, "c");
  toc.cstr("txn-1").cstr("grp").i64(5).i16(0).i32(1).cstr("m").cnull().carr(0).tags0();
  const Decoded d = decode(toc);
  ASSERT_EQ(role_of(d.f, ps()), Role::GroupCoordinator);
  EXPECT_EQ(coordinator_keys(d.f, ps(), Role::GroupCoordinator), std::vector<std::string>{"grp"});
  EXPECT_EQ(coordinator_keys(d.f, ps(), Role::TxnCoordinator), std::vector<std::string>{"txn-1"});
  EXPECT_TRUE(coordinator_keys(d.f, ps(), Role::AnyBroker).empty());
}

// Placement: where a request goes on a cluster whose roles a client learnt from
// its answers. Metadata v12 and FindCoordinator v4 answers, and the requests,
// are built by hand from the specs.
struct Answer {
  std::vector<uint8_t> request, response;
  int16_t api, version;
};
void learn(ClusterView& view, const Answer& a) {
  FrameDecoder dec(ps());
  Frame q, r;
  dec.decode_request(a.request, q);
  dec.decode_response(a.response, a.api, a.version, r);
  ASSERT_TRUE(q.ok() && r.ok());
  view.learn(q, r, ps());
}

ClusterView three_nodes() {
  ClusterView view;
  // Metadata v12: brokers 1-3; orders (id 0x11..): 0 led by 1, 1 and 2 by 2; pages (0x22..): 0 by 3.
  auto mq = header(3, 12, true, "c");
  mq.cnull().boolean(false).boolean(false).tags0();
  wire::MessageBuilder mr;
  mr.i32(7).tags0().i32(0).carr(3);
  for (int n = 1; n <= 3; ++n) mr.i32(n).cstr("127.0.0.2" + std::to_string(n)).i32(9092).cnull().tags0();
  mr.cstr("cluster").i32(1).carr(2);
  auto partition = [&](int index, int leader) {
    mr.i16(0).i32(index).i32(leader).i32(0).carr(1).i32(leader).carr(1).i32(leader).carr(0).tags0();
  };
  mr.i16(0).cstr("orders").uuid(uint8_t{0x11}).boolean(false).carr(3);
  partition(0, 1), partition(1, 2), partition(2, 2);
  mr.i32(-2147483648).tags0();
  mr.i16(0).cstr("pages").uuid(uint8_t{0x22}).boolean(false).carr(1);
  partition(0, 3);
  mr.i32(-2147483648).tags0().tags0();
  learn(view, {mq.message(), mr.message(), 3, 12});
  // FindCoordinator v4: group g at node 3, transactional id t at node 2.
  for (auto [type, key, node] : {std::tuple{0, "g", 3}, std::tuple{1, "t", 2}}) {
    auto fq = header(10, 4, true, "c");
    fq.i8(static_cast<int8_t>(type)).carr(1).cstr(key).tags0();
    wire::MessageBuilder fr;
    fr.i32(7).tags0().i32(0).carr(1).cstr(key).i32(node).cstr("127.0.0.2" + std::to_string(node)).i32(9092).i16(0).cnull().tags0().tags0();
    learn(view, {fq.message(), fr.message(), 10, 4});
  }
  return view;
}

// Produce v9 (flexible, topics by name), records null.
Decoded produce_v9(const std::vector<std::pair<std::string, int>>& partitions) {
  auto b = header(0, 9, true, "p");
  b.cnull().i16(-1).i32(30000).carr(partitions.size());
  for (const auto& [topic, p] : partitions) b.cstr(topic).carr(1).i32(p).cnull().tags0().tags0();
  b.tags0();
  return decode(b);
}

Placement place_in(const ClusterView& view, const Frame& f, std::string_view topic_prefix = "", std::string_view group_prefix = "") {
  // Recorded topic ids are those of the view's Metadata answer.
  const auto name_of = [](std::string_view id) -> std::string {
    uint8_t one[16], two[16];
    std::fill(std::begin(one), std::end(one), uint8_t{0x11});
    std::fill(std::begin(two), std::end(two), uint8_t{0x22});
    return id == wire::uuid_to_string(one) ? "orders" : id == wire::uuid_to_string(two) ? "pages" : "";
  };
  return place(f, ps(), view, name_of, topic_prefix, group_prefix);
}

TEST(Placement, APartitionsRequestGoesToItsLeaderAndSaysWhenItSpansSeveral) {
  const ClusterView view = three_nodes();
  const auto one = produce_v9({{"orders", 1}, {"orders", 2}});
  Placement p = place_in(view, one.f);
  EXPECT_EQ(p.role, Role::PartitionLeader);
  EXPECT_EQ(p.node, 2);
  EXPECT_EQ(p.nodes, 1u);
  EXPECT_TRUE(p.unknown.empty());

  const auto two = produce_v9({{"pages", 0}, {"orders", 0}, {"orders", 2}});
  p = place_in(view, two.f);
  EXPECT_EQ(p.node, 3);     // the first partition's leader
  EXPECT_EQ(p.nodes, 3u);   // it would take three requests

  // --rename-topic: the target's topics carry the prefix; these do not exist there.
  p = place_in(view, one.f, "re-");
  EXPECT_EQ(p.node, ClusterView::kUnknown);
  EXPECT_EQ(p.unknown, "orders-1");

  const auto missing = produce_v9({{"orders", 7}});
  EXPECT_EQ(place_in(view, missing.f).unknown, "orders-7");
}

TEST(Placement, AFetchByTopicIdGoesToTheLeaderOfTheNamedTopic) {
  const ClusterView view = three_nodes();
  auto b = header(1, 13, true, "c");
  b.i32(-1).i32(500).i32(1).i32(1 << 20).i8(0).i32(0).i32(-1);
  b.carr(1).uuid(uint8_t{0x22}).carr(1).i32(0).i32(-1).i64(5).i32(-1).i64(-1).i32(1 << 20).tags0().tags0();
  b.carr(0).cstr("").tags0();
  const auto d = decode(b);
  const Placement p = place_in(view, d.f);
  EXPECT_EQ(p.node, 3);
  EXPECT_EQ(p.nodes, 1u);
}

TEST(Placement, CoordinatorRequestsGoToTheirKeysCoordinator) {
  const ClusterView view = three_nodes();
  // Heartbeat v4: GroupId, GenerationId, MemberId, GroupInstanceId.
  auto hb = header(12, 4, true, "c");
  hb.cstr("g").i32(1).cstr("m").cnull().tags0();
  const auto h = decode(hb);
  Placement p = place_in(view, h.f);
  EXPECT_EQ(p.role, Role::GroupCoordinator);
  EXPECT_EQ(p.node, 3);
  // --rename-group: the renamed group's coordinator is not known yet.
  p = place_in(view, h.f, "", "re-");
  EXPECT_EQ(p.node, ClusterView::kUnknown);
  EXPECT_EQ(p.unknown, "g");

  // InitProducerId v4: TransactionalId, TransactionTimeoutMs, ProducerId, ProducerEpoch.
  auto txn = header(22, 4, true, "p");
  txn.cstr("t").i32(60000).i64(-1).i16(-1).tags0();
  const auto t = decode(txn);
  p = place_in(view, t.f);
  EXPECT_EQ(p.role, Role::TxnCoordinator);
  EXPECT_EQ(p.node, 2);
  // Without a transactional id (an idempotent producer): any broker.
  auto idem = header(22, 4, true, "p");
  idem.cnull().i32(60000).i64(-1).i16(-1).tags0();
  const auto i = decode(idem);
  p = place_in(view, i.f);
  EXPECT_EQ(p.role, Role::AnyBroker);
  EXPECT_EQ(p.node, ClusterView::kUnknown);
}

// Splitting: a Produce v9 of three partitions on two leaders is cut into one
// request per leader, and the answers join into one in the recorded shape
// (bytes worked out by hand from the specs).
TEST(Split, ARequestIsCutByPartitionAndTheAnswersJoinByTopic) {
  // Produce v9: TransactionalId, Acks, TimeoutMs, TopicData [Name, PartitionData [Index, Records]].
  auto produce = [](const std::vector<std::pair<std::string, std::vector<int>>>& topics) {
    auto b = header(0, 9, true, "p");
    b.cnull().i16(-1).i32(30000).carr(topics.size());
    for (const auto& [name, parts] : topics) {
      b.cstr(name).carr(parts.size());
      for (int p : parts) b.i32(p).cnull().tags0();
      b.tags0();
    }
    b.tags0();
    return b;
  };
  const auto whole = decode(produce({{"orders", {0, 1}}, {"pages", {0}}}));
  const auto slots = partition_slots(whole.f, ps());
  ASSERT_EQ(slots.size(), 3u);
  // orders-0 and pages-0 to one leader, orders-1 to another.
  std::vector<uint8_t> first, second;
  std::string error;
  ASSERT_TRUE(keep_partitions(whole.f, ps(), {slots[0].element, slots[2].element}, first, error)) << error;
  ASSERT_TRUE(keep_partitions(whole.f, ps(), {slots[1].element}, second, error)) << error;
  EXPECT_EQ(first, produce({{"orders", {0}}, {"pages", {0}}}).message());
  EXPECT_EQ(second, produce({{"orders", {1}}}).message());

  // Produce v9 answer: Responses [Name, PartitionResponses [Index, ErrorCode, BaseOffset,
  // LogAppendTimeMs, LogStartOffset, RecordErrors, ErrorMessage]], ThrottleTimeMs.
  struct P { int index; long base; };
  auto answer = [](const std::vector<std::pair<std::string, std::vector<P>>>& topics, int throttle) {
    wire::MessageBuilder b;
    b.i32(7).tags0().carr(topics.size());
    for (const auto& [name, parts] : topics) {
      b.cstr(name).carr(parts.size());
      for (const P& p : parts) b.i32(p.index).i16(0).i64(p.base).i64(-1).i64(0).carr(0).cnull().tags0();
      b.tags0();
    }
    b.i32(throttle).tags0();
    return b.message();
  };
  const auto a = answer({{"orders", {{0, 10}}}, {"pages", {{0, 30}}}}, 5), b = answer({{"orders", {{1, 20}}}}, 9);
  FrameDecoder dec(ps());
  Frame fa, fb;
  dec.decode_response(a, 0, 9, fa);
  dec.decode_response(b, 0, 9, fb);
  ASSERT_TRUE(fa.ok() && fb.ok());
  std::vector<uint8_t> joined;
  ASSERT_TRUE(join_answers({&fa, &fb}, ps(), joined, error)) << error;
  // The first answer's fields (its throttle time); orders-1 joins orders under one element.
  EXPECT_EQ(joined, answer({{"orders", {{0, 10}, {1, 20}}}, {"pages", {{0, 30}}}}, 5));
  // A topic only a later answer has is added after the first answer's topics.
  const auto c = answer({{"clicks", {{2, 40}}}}, 0);
  Frame fc;
  dec.decode_response(c, 0, 9, fc);
  joined.clear();
  ASSERT_TRUE(join_answers({&fb, &fc, &fa}, ps(), joined, error)) << error;
  EXPECT_EQ(joined, answer({{"orders", {{1, 20}, {0, 10}}}, {"clicks", {{2, 40}}}, {"pages", {{0, 30}}}}, 9));
  EXPECT_TRUE(splittable("ListOffsets"));
  EXPECT_FALSE(splittable("Fetch"));
}

// A request naming several groups whose coordinators differ is cut by group:
// DescribeGroups v5 and OffsetFetch v8 (bytes worked out by hand from the
// specs), each part with its groups in the recorded order, and the answers
// joined into one holding every group's result.
TEST(Split, ARequestOfSeveralGroupsIsCutByGroupAndTheAnswersJoin) {
  // DescribeGroups v5: Groups []string, IncludeAuthorizedOperations.
  auto describe = [](const std::vector<std::string>& groups) {
    auto b = header(15, 5, true, "admin");
    b.carr(groups.size());
    for (const auto& g : groups) b.cstr(g);
    b.boolean(true).tags0();
    return b;
  };
  const auto whole = decode(describe({"orders", "payments", "audit"}));
  const auto slots = key_slots(whole.f, ps(), Role::GroupCoordinator);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[0].key, "orders");
  EXPECT_EQ(slots[1].key, "payments");
  EXPECT_EQ(slots[2].key, "audit");
  // A transaction coordinator's keys are transactional ids: none here.
  EXPECT_TRUE(key_slots(whole.f, ps(), Role::TxnCoordinator).empty());
  std::vector<uint8_t> first, second;
  std::string error;
  ASSERT_TRUE(keep_keys(whole.f, ps(), {slots[0].element, slots[2].element}, first, error)) << error;
  ASSERT_TRUE(keep_keys(whole.f, ps(), {slots[1].element}, second, error)) << error;
  EXPECT_EQ(first, describe({"orders", "audit"}).message());
  EXPECT_EQ(second, describe({"payments"}).message());

  // DescribeGroups v5 answer: ThrottleTimeMs, Groups [ErrorCode, GroupId, GroupState,
  // ProtocolType, ProtocolData, Members, AuthorizedOperations].
  auto answer = [](const std::vector<std::pair<std::string, std::string>>& groups, int throttle) {
    wire::MessageBuilder b;
    b.i32(7).tags0().i32(throttle).carr(groups.size());
    for (const auto& [g, state] : groups) b.i16(0).cstr(g).cstr(state).cstr("consumer").cstr("range").carr(0).i32(8).tags0();
    b.tags0();
    return b.message();
  };
  const auto a = answer({{"orders", "Stable"}, {"audit", "Empty"}}, 3), b = answer({{"payments", "Stable"}}, 11);
  FrameDecoder dec(ps());
  Frame fa, fb;
  dec.decode_response(a, 15, 5, fa);
  dec.decode_response(b, 15, 5, fb);
  ASSERT_TRUE(fa.ok() && fb.ok());
  std::vector<uint8_t> joined;
  ASSERT_TRUE(join_key_answers({&fa, &fb}, ps(), joined, error)) << error;
  EXPECT_EQ(joined, answer({{"orders", "Stable"}, {"audit", "Empty"}, {"payments", "Stable"}}, 3));

  // OffsetFetch v8: Groups [GroupId, Topics (nullable: all)], RequireStable.
  auto fetch = [](const std::vector<std::string>& groups) {
    auto b = header(9, 8, true, "c");
    b.carr(groups.size());
    for (const auto& g : groups) b.cstr(g).cnull().tags0();
    b.boolean(false).tags0();
    return b;
  };
  const auto offsets = decode(fetch({"g1", "g2"}));
  const auto keys = key_slots(offsets.f, ps(), Role::GroupCoordinator);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[1].key, "g2");
  first.clear();
  ASSERT_TRUE(keep_keys(offsets.f, ps(), {keys[1].element}, first, error)) << error;
  EXPECT_EQ(first, fetch({"g2"}).message());
  // Its answer: ThrottleTimeMs, Groups [GroupId, Topics [Name, Partitions [PartitionIndex,
  // CommittedOffset, CommittedLeaderEpoch, Metadata, ErrorCode]], ErrorCode].
  auto committed = [](const std::string& g, long offset) {
    wire::MessageBuilder b;
    b.i32(7).tags0().i32(0).carr(1).cstr(g).carr(1).cstr("orders").carr(1);
    b.i32(0).i64(offset).i32(-1).cstr("").i16(0).tags0();
    b.tags0().i16(0).tags0().tags0();
    return b.message();
  };
  const auto g1 = committed("g1", 5), g2 = committed("g2", 9);
  Frame f1, f2;
  dec.decode_response(g1, 9, 8, f1);
  dec.decode_response(g2, 9, 8, f2);
  ASSERT_TRUE(f1.ok() && f2.ok());
  joined.clear();
  ASSERT_TRUE(join_key_answers({&f1, &f2}, ps(), joined, error)) << error;
  wire::MessageBuilder both;
  both.i32(7).tags0().i32(0).carr(2);
  for (auto [g, offset] : {std::pair<const char*, long>{"g1", 5}, {"g2", 9}})
    both.cstr(g).carr(1).cstr("orders").carr(1).i32(0).i64(offset).i32(-1).cstr("").i16(0).tags0().tags0().i16(0).tags0();
  both.tags0();
  EXPECT_EQ(joined, both.message());
}

}  // namespace
}  // namespace kwire::replay
