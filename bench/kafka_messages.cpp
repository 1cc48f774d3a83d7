#include "bench/kafka_messages.hpp"

#include <cstdio>

namespace kwire::bench {

namespace {

constexpr int16_t kMetadata = 3;
constexpr int16_t kProduce = 0;
constexpr int16_t kFetch = 1;
constexpr int16_t kListOffsets = 2;
constexpr int16_t kOffsetCommit = 8;
constexpr int16_t kHeartbeat = 12;
constexpr int16_t kStreamsGroupHeartbeat = 88;
constexpr int16_t kStreamsGroupDescribe = 89;
constexpr int kAuthorizedOpsOmitted = INT32_MIN;

uint64_t mix(uint64_t x) {  // splitmix64 finalizer: cheap deterministic "randomness"
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string fmt(const char* f, long long a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

WireMessage finish(const Msg& m, bool request, int16_t api, int version) {
  return {m.message(), request, api, static_cast<int16_t>(version)};
}

// ---- the "orders-app" Kafka Streams application -----------------------------

constexpr const char* kGroup = "orders-app";
constexpr const char* kSourceTopics[3] = {"orders", "customers", "payments"};
constexpr const char* kRepartition = "orders-app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition";
const std::vector<std::vector<std::string>> kChangelogs = {
    {"orders-app-order-store-changelog"},
    {"orders-app-customer-store-changelog", "orders-app-enriched-store-changelog"},
    {"orders-app-payment-store-changelog"},
};

void key_values(Msg& m, std::initializer_list<std::pair<const char*, const char*>> kv) {
  m.carr(kv.size());
  for (auto& [k, v] : kv) m.cstr(k).cstr(v).tags0();
}

// TopicInfo: Name, Partitions, ReplicationFactor, TopicConfigs.
void changelog_info(Msg& m, const std::string& name) {
  m.cstr(name).i32(0).i16(0);
  key_values(m, {{"cleanup.policy", "compact"}, {"min.compaction.lag.ms", "0"}});
  m.tags0();
}
void repartition_info(Msg& m) {
  m.cstr(kRepartition).i32(kStreamsPartitions).i16(3);
  key_values(m, {{"cleanup.policy", "delete"}, {"segment.bytes", "52428800"}, {"retention.ms", "-1"}});
  m.tags0();
}

// Tasks of `member` in subtopology `sub`: partitions p with p % members == (member + shift) % members.
void partitions_of(Msg& m, int member, int shift) {
  int n = 0;
  for (int p = 0; p < kStreamsPartitions; ++p) n += (p % kStreamsMembers) == (member + shift) % kStreamsMembers;
  m.carr(n);
  for (int p = 0; p < kStreamsPartitions; ++p)
    if ((p % kStreamsMembers) == (member + shift) % kStreamsMembers) m.i32(p);
}

// []TaskIds: SubtopologyId, Partitions.
void task_ids(Msg& m, int member, int shift, int subtopologies) {
  m.carr(subtopologies);
  for (int s = 0; s < subtopologies; ++s) {
    m.cstr(std::to_string(s));
    partitions_of(m, member, shift);
    m.tags0();
  }
}

// []TaskOffset: SubtopologyId, Partition, Offset (one per active task).
void task_offsets(Msg& m, int member, int64_t base) {
  int n = 0;
  for (int s = 0; s < 3; ++s)
    for (int p = 0; p < kStreamsPartitions; ++p) n += (p % kStreamsMembers) == member;
  m.carr(n);
  for (int s = 0; s < 3; ++s)
    for (int p = 0; p < kStreamsPartitions; ++p)
      if ((p % kStreamsMembers) == member)
        m.cstr(std::to_string(s)).i32(p).i64(base + static_cast<int64_t>(mix(s * 100 + p) % 1'000'000)).tags0();
}

std::string process_id(int member) {
  return fmt("%08llx-6c1e-4f5a-9d2b-3e8f0a1b2c3d", static_cast<long long>(mix(member) & 0xffffffff));
}
std::string endpoint_host(int member) { return fmt("orders-app-%lld.orders-app.svc.cluster.local", member); }
std::string rack(int member) { return fmt("eu-west-1%c", 'a' + member % 3); }

// StreamsGroupDescribe's TopologyDescriptionNode: Name, NodeType, SourceTopics,
// SinkTopic, Stores, Successors.
void topo_node(Msg& m, const std::string& name, int type, std::initializer_list<const char*> sources,
               const char* sink, std::initializer_list<const char*> stores,
               std::initializer_list<const char*> successors) {
  m.cstr(name).i8(type);
  m.carr(sources.size());
  for (auto* s : sources) m.cstr(s);
  if (sink) m.cstr(sink); else m.cnull();
  m.carr(stores.size());
  for (auto* s : stores) m.cstr(s);
  m.carr(successors.size());
  for (auto* s : successors) m.cstr(s);
  m.tags0();
}

// ---- produce ----------------------------------------------------------------

const char* kProduceTopics[] = {"orders", "payments", "customers", "clickstream"};

}  // namespace

Msg request_header(int api_key, int version, int32_t corr, std::string_view client_id) {
  Msg m;
  m.i16(api_key).i16(version).i32(corr).str(client_id).tags0();
  return m;
}

Msg request_header_v1(int api_key, int version, int32_t corr, std::string_view client_id) {
  Msg m;
  m.i16(api_key).i16(version).i32(corr).str(client_id);
  return m;
}

Msg response_header(int32_t corr) {
  Msg m;
  m.i32(corr).tags0();
  return m;
}

std::string topic_name(int i) {
  static const char* domains[] = {"orders", "payments", "customers", "inventory", "shipments",
                                  "clickstream", "audit", "notifications", "pricing", "fraud"};
  static const char* kinds[] = {"events", "commands", "snapshots", "dlq"};
  std::string s = domains[i % 10];
  s += ".eu-west.";
  s += kinds[(i / 10) % 4];
  s += fmt("-v%lld", 1 + i % 3);
  s += fmt(".%03lld", i);
  return s;
}

// ---- Metadata ---------------------------------------------------------------

// Request header v2 for flexible versions, v1 before; response header v1 / v0.
Msg request_header_for(int api_key, int version, bool flexible, int32_t corr, std::string_view client_id) {
  return flexible ? request_header(api_key, version, corr, client_id) : request_header_v1(api_key, version, corr, client_id);
}
Msg response_header_for(bool flexible, int32_t corr) {
  if (flexible) return response_header(corr);
  Msg m;
  m.i32(corr);
  return m;
}
void tags_if(Msg& m, bool flexible) {
  if (flexible) m.tags0();
}
// A nullable string: compact or classic, null when `null`.
void nstr(Msg& m, bool flexible, bool null, std::string_view v) {
  if (!null) m.s(flexible, v);
  else if (flexible) m.cnull();
  else m.i16(-1);
}

// Topics x partitions as these messages nest them: each topic by name (or by
// TopicId), then its partitions, each written by `partition(t, p)`, with the
// tagged-field sections of flexible versions.
template <class F>
void topic_partitions(Msg& m, bool flex, bool by_id, int topics, int partitions, F partition) {
  m.arr(flex, topics);
  for (int t = 0; t < topics; ++t) {
    if (by_id) m.uuid(mix(t), mix(t + 0x10000));
    else m.s(flex, topic_name(t));
    m.arr(flex, partitions);
    for (int p = 0; p < partitions; ++p) {
      partition(t, p);
      tags_if(m, flex);
    }
    tags_if(m, flex);
  }
}

WireMessage metadata_request(int32_t corr, int version, int topics) {
  const bool flex = version >= 9;
  Msg m = request_header_for(kMetadata, version, flex, corr, "producer-orders-1");
  if (topics == 0) {
    if (version == 0) m.i32(0);  // v0 has no null: an empty list asks for all
    else if (flex) m.cnull();
    else m.i32(-1);
  } else {
    m.arr(flex, topics);
    for (int t = 0; t < topics; ++t) {
      if (version >= 10) m.uuid(0, 0);  // TopicId
      m.s(flex, topic_name(t));
      tags_if(m, flex);
    }
  }
  if (version >= 4) m.boolean(false);                    // AllowAutoTopicCreation
  if (version >= 8 && version <= 10) m.boolean(false);   // IncludeClusterAuthorizedOperations
  if (version >= 8) m.boolean(false);                    // IncludeTopicAuthorizedOperations
  tags_if(m, flex);
  return finish(m, true, kMetadata, version);
}

WireMessage metadata_response(int32_t corr, int version, int topics, int partitions, int brokers) {
  const bool flex = version >= 9;
  Msg m = response_header_for(flex, corr);
  if (version >= 3) m.i32(0);  // ThrottleTimeMs
  m.arr(flex, brokers);
  for (int b = 0; b < brokers; ++b) {
    m.i32(b + 1).s(flex, fmt("broker-%lld.kafka.svc.cluster.local", b + 1)).i32(9092);
    if (version >= 1) m.s(flex, rack(b));
    tags_if(m, flex);
  }
  if (version >= 2) m.s(flex, "MkU3OEVBNTcwNTJENDM2Qk");  // ClusterId
  if (version >= 1) m.i32(1);                            // ControllerId
  m.arr(flex, topics);
  for (int t = 0; t < topics; ++t) {
    m.i16(0).s(flex, topic_name(t));
    if (version >= 10) m.uuid(mix(t), mix(t + 0x10000));  // TopicId
    if (version >= 1) m.boolean(false);                   // IsInternal
    m.arr(flex, partitions);
    for (int p = 0; p < partitions; ++p) {
      int leader = static_cast<int>((t + p) % brokers);
      m.i16(0).i32(p).i32(leader + 1);
      if (version >= 7) m.i32(static_cast<int>(mix(t * 1000 + p) % 40));  // LeaderEpoch
      m.arr(flex, 3);
      for (int r = 0; r < 3; ++r) m.i32((leader + r) % brokers + 1);
      bool shrunk = mix(t * 7919 + p) % 50 == 0;  // now and then a follower is out of sync
      m.arr(flex, shrunk ? 2 : 3);
      for (int r = 0; r < (shrunk ? 2 : 3); ++r) m.i32((leader + r) % brokers + 1);
      if (version >= 5) m.arr(flex, 0);  // OfflineReplicas
      tags_if(m, flex);
    }
    if (version >= 8) m.i32(kAuthorizedOpsOmitted);
    tags_if(m, flex);
  }
  if (version >= 8 && version <= 10) m.i32(kAuthorizedOpsOmitted);  // ClusterAuthorizedOperations
  if (version >= 13) m.i16(0);                                      // ErrorCode
  tags_if(m, flex);
  return finish(m, false, kMetadata, version);
}

// ---- Consumer group traffic: Heartbeat, OffsetCommit, ListOffsets ------------

WireMessage heartbeat_request(int32_t corr, int version, int consumer, int generation) {
  const bool flex = version >= 4;
  Msg m = request_header_for(kHeartbeat, version, flex, corr, "consumer-orders-" + std::to_string(consumer));
  m.s(flex, "orders-consumers").i32(generation).s(flex, "consumer-" + std::to_string(consumer) + "-6f1c2a");
  if (version >= 3) nstr(m, flex, true, {});  // GroupInstanceId
  tags_if(m, flex);
  return finish(m, true, kHeartbeat, version);
}

WireMessage heartbeat_response(int32_t corr, int version, int error) {
  const bool flex = version >= 4;
  Msg m = response_header_for(flex, corr);
  if (version >= 1) m.i32(0);
  m.i16(error);
  tags_if(m, flex);
  return finish(m, false, kHeartbeat, version);
}

WireMessage offset_commit_request(int32_t corr, int version, int consumer, int generation, int topics, int partitions,
                                  int64_t offset) {
  const bool flex = version >= 8;
  Msg m = request_header_for(kOffsetCommit, version, flex, corr, "consumer-orders-" + std::to_string(consumer));
  m.s(flex, "orders-consumers").i32(generation).s(flex, "consumer-" + std::to_string(consumer) + "-6f1c2a");
  if (version >= 7) nstr(m, flex, true, {});  // GroupInstanceId
  if (version <= 4) m.i64(-1);                // RetentionTimeMs
  topic_partitions(m, flex, version >= 10, topics, partitions, [&](int t, int p) {
    m.i32(p).i64(offset + static_cast<int64_t>(mix(t * 131 + p) % 5000));
    if (version >= 6) m.i32(static_cast<int>(mix(t * 1000 + p) % 40));  // CommittedLeaderEpoch
    nstr(m, flex, p % 4 != 0, "");                                       // CommittedMetadata
  });
  tags_if(m, flex);
  return finish(m, true, kOffsetCommit, version);
}

WireMessage offset_commit_response(int32_t corr, int version, int topics, int partitions) {
  const bool flex = version >= 8;
  Msg m = response_header_for(flex, corr);
  if (version >= 3) m.i32(0);
  topic_partitions(m, flex, version >= 10, topics, partitions, [&](int, int p) { m.i32(p).i16(0); });
  tags_if(m, flex);
  return finish(m, false, kOffsetCommit, version);
}

WireMessage list_offsets_request(int32_t corr, int version, int consumer, int topics, int partitions) {
  const bool flex = version >= 6;
  Msg m = request_header_for(kListOffsets, version, flex, corr, "consumer-orders-" + std::to_string(consumer));
  m.i32(-1);                       // ReplicaId
  if (version >= 2) m.i8(1);       // IsolationLevel: read_committed
  topic_partitions(m, flex, false, topics, partitions, [&](int t, int p) {
    m.i32(p);
    if (version >= 4) m.i32(static_cast<int>(mix(t * 1000 + p) % 40));  // CurrentLeaderEpoch
    m.i64(p % 2 ? -1 : -2);                                              // LATEST / EARLIEST
  });
  if (version >= 10) m.i32(30000);  // TimeoutMs
  tags_if(m, flex);
  return finish(m, true, kListOffsets, version);
}

WireMessage list_offsets_response(int32_t corr, int version, int topics, int partitions) {
  const bool flex = version >= 6;
  Msg m = response_header_for(flex, corr);
  if (version >= 2) m.i32(0);
  topic_partitions(m, flex, false, topics, partitions, [&](int t, int p) {
    m.i32(p).i16(0).i64(-1).i64(static_cast<int64_t>(mix(t * 131 + p) % 10'000'000));
    if (version >= 4) m.i32(static_cast<int>(mix(t * 1000 + p) % 40));  // LeaderEpoch
  });
  tags_if(m, flex);
  return finish(m, false, kListOffsets, version);
}

// ---- StreamsGroupHeartbeat v1 -----------------------------------------------

std::string member_id(int member) {
  // Kafka's member ids are Uuid strings (22 characters of URL-safe base64).
  static const char* ids[] = {"Bq7xQ2mYT3e5l0s9KZ4wGA", "c1LnA8vRSo2Wq6dPzX0fHg", "rT5kM3pUQ0aJx7eYbN9vCw",
                              "W2sD6hFgS8uKm4cVjL1oEQ", "nH3yR7tXQ5iBz0pGwM8dUA", "kZ9vE1qLT6oNc3sRfY2hJw"};
  return ids[member % 6];
}

WireMessage sg_heartbeat_join_request(int32_t corr, int member) {
  std::string client = "orders-app-" + process_id(member) + "-StreamThread-1-consumer";
  Msg m = request_header(kStreamsGroupHeartbeat, 1, corr, client);
  m.cstr(kGroup).cstr(member_id(member)).i32(0).i32(0);  // GroupId, MemberId, MemberEpoch, EndpointInformationEpoch
  m.cnull().cstr(rack(member)).i32(300000);               // InstanceId, RackId, RebalanceTimeoutMs
  m.present().i32(1);                                     // Topology, Epoch
  m.carr(3);
  // Subtopology 0: orders -> aggregate -> repartition by customer.
  m.cstr("0").carr(1).cstr(kSourceTopics[0]).carr(0);    // SubtopologyId, SourceTopics, SourceTopicRegex
  m.carr(1);
  changelog_info(m, kChangelogs[0][0]);
  m.carr(1).cstr(kRepartition);                           // RepartitionSinkTopics
  m.carr(0).carr(0).tags0();                              // RepartitionSourceTopics, CopartitionGroups
  // Subtopology 1: repartitioned orders joined with customers.
  m.cstr("1").carr(1).cstr(kSourceTopics[1]).carr(0);
  m.carr(2);
  changelog_info(m, kChangelogs[1][0]);
  changelog_info(m, kChangelogs[1][1]);
  m.carr(0);
  m.carr(1);
  repartition_info(m);
  m.carr(1).carr(1).i16(0).carr(0).carr(1).i16(0).tags0();  // CopartitionGroups: {[0], [], [0]}
  m.tags0();
  // Subtopology 2: payments.
  m.cstr("2").carr(1).cstr(kSourceTopics[2]).carr(0);
  m.carr(1);
  changelog_info(m, kChangelogs[2][0]);
  m.carr(0).carr(0).carr(0).tags0();
  m.tags0();                                              // end of Topology
  m.carr(0).carr(0).carr(0);                              // Active/Standby/WarmupTasks: none yet
  m.cstr(process_id(member));
  m.present().cstr(endpoint_host(member)).i16(8080).tags0();  // UserEndpoint
  key_values(m, {{"az", rack(member).c_str()}, {"app.version", "2.7.1"}});
  m.cnull().cnull();                                      // TaskOffsets, TaskEndOffsets
  m.boolean(false).tags0();                               // ShutdownApplication
  return finish(m, true, kStreamsGroupHeartbeat, 1);
}

// A member's heartbeat past the join: ids and epochs, no topology.
Msg member_heartbeat(int32_t corr, int member, int epoch) {
  std::string client = "orders-app-" + process_id(member) + "-StreamThread-1-consumer";
  Msg m = request_header(kStreamsGroupHeartbeat, 1, corr, client);
  m.cstr(kGroup).cstr(member_id(member)).i32(epoch).i32(epoch);
  m.cnull().cnull().i32(-1).absent();                     // InstanceId, RackId, RebalanceTimeoutMs, Topology
  return m;
}

WireMessage sg_heartbeat_tasks_request(int32_t corr, int member, int epoch) {
  Msg m = member_heartbeat(corr, member, epoch);
  task_ids(m, member, 0, 3);                              // ActiveTasks
  task_ids(m, member, 1, 2);                              // StandbyTasks
  task_ids(m, member, 2, 1);                              // WarmupTasks
  m.cnull().absent().cnull();                             // ProcessId, UserEndpoint, ClientTags
  task_offsets(m, member, 1'000'000);                     // TaskOffsets
  task_offsets(m, member, 1'050'000);                     // TaskEndOffsets
  m.boolean(false).tags0();
  return finish(m, true, kStreamsGroupHeartbeat, 1);
}

WireMessage sg_heartbeat_assignment_response(int32_t corr, int member, int epoch) {
  Msg m = response_header(corr);
  m.i32(0).i16(0).cnull().cstr(member_id(member)).i32(epoch).i32(5000);  // Throttle, Error, Message, MemberId, Epoch, Interval
  m.i32(60000).i64(10000);                               // TaskOffsetIntervalMs, AcceptableRecoveryLag
  m.cnull();                                             // Status
  task_ids(m, member, 0, 3);
  task_ids(m, member, 1, 2);
  task_ids(m, member, 2, 1);
  m.boolean(false).i32(epoch);                           // TopologyDescriptionRequired, EndpointInformationEpoch
  // PartitionsByUserEndpoint: every member's endpoint with its active and standby partitions.
  m.carr(kStreamsMembers);
  for (int e = 0; e < kStreamsMembers; ++e) {
    m.cstr(endpoint_host(e)).i16(8080).tags0();
    m.carr(3);
    for (int t = 0; t < 3; ++t) {
      m.cstr(kSourceTopics[t]);
      partitions_of(m, e, 0);
      m.tags0();
    }
    m.carr(2);
    for (int t = 0; t < 2; ++t) {
      m.cstr(kChangelogs[t][0]);
      partitions_of(m, e, 1);
      m.tags0();
    }
    m.tags0();
  }
  m.tags0();
  return finish(m, false, kStreamsGroupHeartbeat, 1);
}

WireMessage sg_heartbeat_steady_request(int32_t corr, int member, int epoch) {
  Msg m = member_heartbeat(corr, member, epoch);
  m.cnull().cnull().cnull();                              // tasks unchanged
  m.cnull().absent().cnull().cnull().cnull();             // ProcessId, UserEndpoint, ClientTags, TaskOffsets, TaskEndOffsets
  m.boolean(false).tags0();
  return finish(m, true, kStreamsGroupHeartbeat, 1);
}

WireMessage sg_heartbeat_steady_response(int32_t corr, int member, int epoch) {
  Msg m = response_header(corr);
  m.i32(0).i16(0).cnull().cstr(member_id(member)).i32(epoch).i32(5000);
  m.i32(60000).i64(10000);
  m.cnull().cnull().cnull().cnull();                     // Status, Active, Standby, Warmup
  m.boolean(false).i32(epoch).cnull().tags0();           // TopologyDescriptionRequired, EndpointEpoch, PartitionsByUserEndpoint
  return finish(m, false, kStreamsGroupHeartbeat, 1);
}

// ---- StreamsGroupDescribe v1 ------------------------------------------------

WireMessage sg_describe_request(int32_t corr) {
  Msg m = request_header(kStreamsGroupDescribe, 1, corr, "adminclient-1");
  m.carr(1).cstr(kGroup).boolean(true).boolean(true).tags0();
  return finish(m, true, kStreamsGroupDescribe, 1);
}

WireMessage sg_describe_response(int32_t corr, int epoch) {
  Msg m = response_header(corr);
  m.i32(0).carr(1);
  m.i16(0).cnull().cstr(kGroup).cstr("Stable").i32(epoch).i32(epoch);
  // Topology: Epoch, Subtopologies (SubtopologyId, SourceTopics,
  // RepartitionSinkTopics, StateChangelogTopics, RepartitionSourceTopics).
  m.present().i32(1).carr(3);
  m.cstr("0").carr(1).cstr(kSourceTopics[0]).carr(1).cstr(kRepartition);
  m.carr(1);
  changelog_info(m, kChangelogs[0][0]);
  m.carr(0).tags0();
  m.cstr("1").carr(1).cstr(kSourceTopics[1]).carr(0);
  m.carr(2);
  changelog_info(m, kChangelogs[1][0]);
  changelog_info(m, kChangelogs[1][1]);
  m.carr(1);
  repartition_info(m);
  m.tags0();
  m.cstr("2").carr(1).cstr(kSourceTopics[2]).carr(0);
  m.carr(1);
  changelog_info(m, kChangelogs[2][0]);
  m.carr(0).tags0();
  m.tags0();
  // Members.
  m.carr(kStreamsMembers);
  for (int k = 0; k < kStreamsMembers; ++k) {
    m.cstr(member_id(k)).i32(epoch).cnull().cstr(rack(k));
    m.cstr("orders-app-" + process_id(k) + "-StreamThread-1-consumer");
    m.cstr(fmt("/10.0.1.%lld", 10 + k)).i32(1).cstr(process_id(k));
    m.present().cstr(endpoint_host(k)).i16(8080).tags0();
    key_values(m, {{"az", rack(k).c_str()}, {"app.version", "2.7.1"}});
    task_offsets(m, k, 1'000'000);
    task_offsets(m, k, 1'050'000);
    for (int a = 0; a < 2; ++a) {  // Assignment, TargetAssignment
      task_ids(m, k, 0, 3);
      task_ids(m, k, 1, 2);
      task_ids(m, k, 2, a == 0 ? 1 : 0);
      m.tags0();
    }
    m.boolean(false).tags0();  // IsClassic
  }
  m.i32(kAuthorizedOpsOmitted);
  // TopologyDescription: node types 0 source, 1 processor, 2 sink.
  m.present().carr(3);
  m.cstr("0").carr(4);
  topo_node(m, "KSTREAM-SOURCE-0000000000", 0, {"orders"}, nullptr, {}, {"KSTREAM-KEY-SELECT-0000000001"});
  topo_node(m, "KSTREAM-KEY-SELECT-0000000001", 1, {}, nullptr, {}, {"KSTREAM-FILTER-0000000004"});
  topo_node(m, "KSTREAM-FILTER-0000000004", 1, {}, nullptr, {"order-store"}, {"KSTREAM-SINK-0000000003"});
  topo_node(m, "KSTREAM-SINK-0000000003", 2, {}, kRepartition, {}, {});
  m.tags0();
  m.cstr("1").carr(5);
  topo_node(m, "KSTREAM-SOURCE-0000000005", 0, {kRepartition}, nullptr, {}, {"KSTREAM-AGGREGATE-0000000002"});
  topo_node(m, "KTABLE-SOURCE-0000000006", 0, {"customers"}, nullptr, {}, {"KTABLE-SOURCE-0000000007"});
  topo_node(m, "KTABLE-SOURCE-0000000007", 1, {}, nullptr, {"customer-store"}, {"KSTREAM-LEFTJOIN-0000000008"});
  topo_node(m, "KSTREAM-AGGREGATE-0000000002", 1, {}, nullptr, {"enriched-store"}, {"KSTREAM-LEFTJOIN-0000000008"});
  topo_node(m, "KSTREAM-LEFTJOIN-0000000008", 1, {}, nullptr, {"customer-store"}, {});
  m.tags0();
  m.cstr("2").carr(3);
  topo_node(m, "KSTREAM-SOURCE-0000000009", 0, {"payments"}, nullptr, {}, {"KSTREAM-PROCESSOR-0000000010"});
  topo_node(m, "KSTREAM-PROCESSOR-0000000010", 1, {}, nullptr, {"payment-store"}, {"KSTREAM-SINK-0000000011"});
  topo_node(m, "KSTREAM-SINK-0000000011", 2, {}, "orders-app-payments-enriched", {}, {});
  m.tags0();
  m.carr(1);  // GlobalStores: Source, Processor
  topo_node(m, "KSTREAM-SOURCE-0000000012", 0, {"currency-rates"}, nullptr, {}, {"KTABLE-SOURCE-0000000013"});
  topo_node(m, "KTABLE-SOURCE-0000000013", 1, {}, nullptr, {"currency-rates-store"}, {});
  m.tags0();
  m.tags0();  // end of TopologyDescription
  m.i8(0).cstr("sticky").tags0();  // TopologyDescriptionStatus, AssignorName
  m.tags0();
  return finish(m, false, kStreamsGroupDescribe, 1);
}

// ---- Produce ----------------------------------------------------------------

BatchSpec record_batch_spec(uint64_t seed, int records, Codec codec, int64_t base_timestamp) {
  static const char* currencies[] = {"EUR", "USD", "GBP", "CHF", "SEK"};
  static const char* states[] = {"created", "paid", "shipped", "delivered", "cancelled"};
  BatchSpec b;
  b.base_timestamp = base_timestamp;
  b.producer_id = 4000 + static_cast<int64_t>(seed % 16);
  b.producer_epoch = 0;
  b.base_sequence = static_cast<int32_t>(seed % 100000) * records;
  b.codec = codec;
  b.records.reserve(static_cast<size_t>(records));
  for (int r = 0; r < records; ++r) {
    uint64_t x = mix(seed * 1'000'003 + static_cast<uint64_t>(r));
    RecordSpec rec;
    rec.timestamp_delta = r * 3 + static_cast<int64_t>(x % 3);
    char key[32], value[160];
    std::snprintf(key, sizeof key, "cust-%07llu", static_cast<unsigned long long>(x % 10'000'000));
    std::snprintf(value, sizeof value,
                  "{\"order\":%llu,\"customer\":\"%s\",\"amount\":%llu.%02llu,\"currency\":\"%s\",\"state\":\"%s\"}",
                  static_cast<unsigned long long>(x >> 20) % 1'000'000'000ULL, key,
                  static_cast<unsigned long long>((x >> 8) % 5000), static_cast<unsigned long long>(x % 100),
                  currencies[(x >> 40) % 5], states[(x >> 44) % 5]);
    rec.key = key;
    rec.value = value;
    b.records.push_back(std::move(rec));
  }
  return b;
}

WireMessage produce_request(int32_t corr, int version, int topics, int partitions, int records, Codec codec,
                            uint64_t seed, int64_t base_timestamp) {
  const bool flex = version >= 9;  // v9+: compact strings and arrays, tagged fields, request header v2
  Msg m = flex ? request_header(kProduce, version, corr, "producer-orders-1")
               : request_header_v1(kProduce, version, corr, "producer-orders-1");
  if (flex) m.cnull(); else m.i16(-1);  // TransactionalId
  m.i16(-1).i32(30000);                 // Acks (all), TimeoutMs
  m.arr(flex, topics);
  for (int t = 0; t < topics; ++t) {
    if (version >= 13) m.uuid(mix(t), mix(t + 0x10000));
    else m.s(flex, kProduceTopics[t % 4]);
    m.arr(flex, partitions);
    for (int p = 0; p < partitions; ++p) {
      BatchSpec spec = record_batch_spec(seed * 64 + static_cast<uint64_t>(t * 16 + p), records, codec,
                                         base_timestamp);
      std::vector<uint8_t> batch = encode_record_batch(spec);
      m.i32(p);
      if (flex) m.cbytes(batch).tags0(); else m.i32(static_cast<int64_t>(batch.size())).raw(batch);
    }
    if (flex) m.tags0();
  }
  if (flex) m.tags0();
  return finish(m, true, kProduce, version);
}

WireMessage produce_response(int32_t corr, int version, int topics, int partitions, int64_t base_offset) {
  const bool flex = version >= 9;
  Msg m;
  m.i32(corr);
  if (flex) m.tags0();
  m.arr(flex, topics);
  for (int t = 0; t < topics; ++t) {
    if (version >= 13) m.uuid(mix(t), mix(t + 0x10000));
    else m.s(flex, kProduceTopics[t % 4]);
    m.arr(flex, partitions);
    for (int p = 0; p < partitions; ++p) {
      m.i32(p).i16(0).i64(base_offset + p * 7);       // Index, ErrorCode, BaseOffset
      if (version >= 2) m.i64(-1);                    // LogAppendTimeMs
      if (version >= 5) m.i64(0);                     // LogStartOffset
      if (version >= 8) {                             // RecordErrors, ErrorMessage
        m.arr(flex, 0);
        if (flex) m.cnull(); else m.i16(-1);
      }
      if (flex) m.tags0();
    }
    if (flex) m.tags0();
  }
  m.i32(0);  // ThrottleTimeMs
  if (flex) m.tags0();
  return finish(m, false, kProduce, version);
}

// FetchRequest v11: ReplicaId, MaxWaitMs, MinBytes, MaxBytes, IsolationLevel,
// SessionId, SessionEpoch, Topics [Topic, Partitions [Partition,
// CurrentLeaderEpoch, FetchOffset, LogStartOffset, PartitionMaxBytes]],
// ForgottenTopicsData, RackId.
WireMessage fetch_request(int32_t corr, int topics, int partitions, int64_t offset) {
  Msg m = request_header_v1(kFetch, 11, corr, "consumer-orders-1");
  m.i32(-1).i32(500).i32(1).i32(52428800).i8(1).i32(0).i32(-1);
  m.i32(topics);
  for (int t = 0; t < topics; ++t) {
    m.str(kProduceTopics[t % 4]).i32(partitions);
    for (int p = 0; p < partitions; ++p) m.i32(p).i32(3).i64(offset).i64(0).i32(1048576);
  }
  m.i32(0).str("rack-a");
  return finish(m, true, kFetch, 11);
}

// FetchResponse v11: ThrottleTimeMs, ErrorCode, SessionId, Responses [Topic,
// Partitions [PartitionIndex, ErrorCode, HighWatermark, LastStableOffset,
// LogStartOffset, AbortedTransactions (null), PreferredReadReplica, Records]].
WireMessage fetch_response(int32_t corr, int topics, int partitions, int records, Codec codec, uint64_t seed,
                           int64_t offset, int64_t base_timestamp) {
  Msg m;
  m.i32(corr);
  m.i32(0).i16(0).i32(0);
  m.i32(topics);
  for (int t = 0; t < topics; ++t) {
    m.str(kProduceTopics[t % 4]).i32(partitions);
    for (int p = 0; p < partitions; ++p) {
      BatchSpec spec = record_batch_spec(seed * 64 + static_cast<uint64_t>(t * 16 + p), records, codec,
                                         base_timestamp);
      spec.base_offset = offset;
      std::vector<uint8_t> batch = encode_record_batch(spec);
      m.i32(p).i16(0).i64(offset + records).i64(offset + records).i64(0).i32(-1).i32(-1);
      m.i32(static_cast<int64_t>(batch.size())).raw(batch);
    }
  }
  return finish(m, false, kFetch, 11);
}

WireMessage heartbeat_request(int32_t corr, int consumer, int generation) {
  return heartbeat_request(corr, 3, consumer, generation);
}
WireMessage heartbeat_response(int32_t corr) { return heartbeat_response(corr, 3, 0); }

}  // namespace kwire::bench
