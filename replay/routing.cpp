#include "replay/routing.hpp"

#include <algorithm>

#include "wire/wire.hpp"

#include <map>

namespace kwire::replay {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::AnyBroker: return "any broker";
    case Role::PartitionLeader: return "partition leader";
    case Role::GroupCoordinator: return "group coordinator";
    case Role::TxnCoordinator: return "transaction coordinator";
    case Role::ShareCoordinator: return "share coordinator";
    case Role::EachBroker: return "each broker";
    case Role::Controller: return "controller";
  }
  return "?";
}

namespace {

// Every api that is not sent to any broker names its role here; the test
// (tests/test_routing.cpp) holds the table to the specs' own listeners.
const std::map<std::string_view, Role, std::less<>>& roles() {
  static const std::map<std::string_view, Role, std::less<>> table = {
      // The leader of each partition the request names.
      {"Produce", Role::PartitionLeader},
      {"Fetch", Role::PartitionLeader},
      {"ListOffsets", Role::PartitionLeader},
      {"OffsetForLeaderEpoch", Role::PartitionLeader},
      {"DeleteRecords", Role::PartitionLeader},
      {"DescribeProducers", Role::PartitionLeader},
      {"ShareFetch", Role::PartitionLeader},
      {"ShareAcknowledge", Role::PartitionLeader},
      // The coordinator of the group (FindCoordinator key type 0).
      {"JoinGroup", Role::GroupCoordinator},
      {"SyncGroup", Role::GroupCoordinator},
      {"Heartbeat", Role::GroupCoordinator},
      {"LeaveGroup", Role::GroupCoordinator},
      {"OffsetCommit", Role::GroupCoordinator},
      {"OffsetFetch", Role::GroupCoordinator},
      {"OffsetDelete", Role::GroupCoordinator},
      {"DescribeGroups", Role::GroupCoordinator},
      {"DeleteGroups", Role::GroupCoordinator},
      {"TxnOffsetCommit", Role::GroupCoordinator},
      {"ConsumerGroupHeartbeat", Role::GroupCoordinator},
      {"ConsumerGroupDescribe", Role::GroupCoordinator},
      {"ShareGroupHeartbeat", Role::GroupCoordinator},
      {"ShareGroupDescribe", Role::GroupCoordinator},
      {"DescribeShareGroupOffsets", Role::GroupCoordinator},
      {"AlterShareGroupOffsets", Role::GroupCoordinator},
      {"DeleteShareGroupOffsets", Role::GroupCoordinator},
      {"StreamsGroupHeartbeat", Role::GroupCoordinator},
      {"StreamsGroupDescribe", Role::GroupCoordinator},
      {"StreamsGroupTopologyDescriptionUpdate", Role::GroupCoordinator},
      // The coordinator of the transactional id (key type 1).
      {"InitProducerId", Role::TxnCoordinator},
      {"AddPartitionsToTxn", Role::TxnCoordinator},
      {"AddOffsetsToTxn", Role::TxnCoordinator},
      {"EndTxn", Role::TxnCoordinator},
      {"DescribeTransactions", Role::TxnCoordinator},
      // The share coordinator of a share partition (key type 2), asked by the
      // partition's leader.
      {"InitializeShareGroupState", Role::ShareCoordinator},
      {"ReadShareGroupState", Role::ShareCoordinator},
      {"WriteShareGroupState", Role::ShareCoordinator},
      {"DeleteShareGroupState", Role::ShareCoordinator},
      {"ReadShareGroupStateSummary", Role::ShareCoordinator},
      // Answers that are the asked broker's own.
      {"ListGroups", Role::EachBroker},
      {"ListTransactions", Role::EachBroker},
      {"DescribeLogDirs", Role::EachBroker},
      {"AlterReplicaLogDirs", Role::EachBroker},
  };
  return table;
}

}  // namespace

Role role_of(std::string_view api) {
  const auto& t = roles();
  auto it = t.find(api);
  return it == t.end() ? Role::AnyBroker : it->second;
}

Role role_of(const MessageProgram& m) {
  // Controller-only listeners, or the ZooKeeper-era RPCs the controller sent
  // brokers (their specs name no listener at all).
  if (m.controller_only || m.api_name == "LeaderAndIsr" || m.api_name == "StopReplica" ||
      m.api_name == "UpdateMetadata" || m.api_name == "ControlledShutdown")
    return Role::Controller;
  return role_of(m.api_name);
}

Role role_of(const Frame& request, const ProgramSet& ps) {
  if (!request.program) return Role::AnyBroker;
  const Role r = role_of(*request.program);
  if (r == Role::TxnCoordinator && request.program->api_name == "InitProducerId" && request.body) {
    const Node* id = find_field(request, ps, request.body, "TransactionalId");
    if (!id || id->is_null()) return Role::AnyBroker;  // an idempotent producer's id: any broker hands one out
  }
  return r;
}

namespace {

bool is_partition_index(const Node& n, const FieldDesc& d) {
  return n.type == WireType::Int32 && (d.name == "PartitionIndex" || d.name == "Partition" || d.name == "Index");
}

}  // namespace

std::vector<PartitionRef> partitions_of(const Frame& f, const ProgramSet& ps) {
  std::vector<PartitionRef> out;
  for (auto& s : partition_slots(f, ps)) out.push_back(std::move(s.ref));
  return out;
}

std::vector<PartitionSlot> partition_slots(const Frame& f, const ProgramSet& ps) {
  std::vector<PartitionSlot> out;
  if (!f.body) return out;
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& el = f.nodes[i];
    if (el.type != WireType::Struct || !(el.flags & kElement)) continue;
    // A topic's element: its name or id, then its partitions (an array of
    // elements with a partition index, or of plain indexes).
    PartitionRef topic;
    uint32_t parts = 0;
    for (uint32_t c : Children(f, i)) {
      const Node& n = f.nodes[c];
      const FieldDesc& d = ps.field(n.desc);
      if (n.type == WireType::String && d.entity == "topicName" && !n.is_null() && !n.str().empty()) {
        topic.topic = std::string(n.str());
        topic.by_id = false;
      } else if (n.type == WireType::Uuid && d.name == "TopicId" && topic.topic.empty()) {
        static const uint8_t zero[16] = {};
        if (!std::equal(n.v.p, n.v.p + 16, zero)) topic.topic = wire::uuid_to_string(n.v.p), topic.by_id = true;
      } else if (n.type == WireType::Array && !n.is_null() && !parts) {
        parts = c;
      }
    }
    if (topic.topic.empty() || !parts) continue;
    // A fetch session's forgotten partitions are not fetched.
    if (ps.field(f.nodes[el.parent].desc).name.starts_with("Forgotten")) continue;
    for (uint32_t p : Children(f, parts)) {
      const Node& pn = f.nodes[p];
      if (pn.type == WireType::Int32) {
        out.push_back({{topic.topic, topic.by_id, static_cast<int32_t>(pn.v.i)}, i, p});
        continue;
      }
      if (pn.type != WireType::Struct) break;
      for (uint32_t c : Children(f, p))
        if (is_partition_index(f.nodes[c], ps.field(f.nodes[c].desc))) {
          out.push_back({{topic.topic, topic.by_id, static_cast<int32_t>(f.nodes[c].v.i)}, i, p});
          break;
        }
    }
  }
  return out;
}

std::vector<std::string> coordinator_keys(const Frame& f, const ProgramSet& ps, Role role) {
  std::vector<std::string> out;
  if (!f.body || (role != Role::GroupCoordinator && role != Role::TxnCoordinator && role != Role::ShareCoordinator))
    return out;
  const std::string_view entity = role == Role::TxnCoordinator ? "transactionalId" : "groupId";
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type != WireType::String || n.is_null() || ps.field(n.desc).entity != entity) continue;
    std::string key(n.str());
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(std::move(key));
  }
  return out;
}

const std::vector<std::string_view>& broker_traffic_kinds() {
  static const std::vector<std::string_view> kinds = {"replica fetch", "controller", "transaction marker",
                                                      "transaction verification", "share state"};
  return kinds;
}

BrokerTraffic broker_traffic(const Frame& f, const ProgramSet& ps) {
  if (!f.program) return {};
  const std::string api(f.program->api_name);
  const std::string what = api + " v" + std::to_string(f.api_version);
  if (role_of(f, ps) == Role::Controller) return {"controller", what};
  if (api == "WriteTxnMarkers") return {"transaction marker", what};
  // From v4 AddPartitionsToTxn is what a partition leader sends the
  // transaction coordinator to verify a transactional write.
  if (api == "AddPartitionsToTxn" && f.api_version >= 4) return {"transaction verification", what};
  if (role_of(api) == Role::ShareCoordinator) return {"share state", what};
  // Key type 2: a share-partition leader finding its share coordinator.
  if (api == "FindCoordinator" && f.body) {
    const Node* type = find_field(f, ps, f.body, "KeyType");
    if (type && type->v.i == 2) return {"share state", what + " with key type 2 (a share coordinator)"};
  }
  // A follower names itself: a replica id of 0 or more (clients send -1, and
  // ListOffsets -2 for a debugging consumer). Fetch moved it into ReplicaState in v15.
  if (f.body && (api == "Fetch" || api == "ListOffsets" || api == "OffsetForLeaderEpoch")) {
    const Node* id = find_field(f, ps, f.body, "ReplicaId");
    if (!id) {
      if (const Node* state = find_field(f, ps, f.body, "ReplicaState"))
        id = find_field(f, ps, static_cast<uint32_t>(state - f.nodes.data()), "ReplicaId");
    }
    if (id && !id->is_null() && id->v.i >= 0) return {"replica fetch", what + " with replica id " + std::to_string(id->v.i)};
  }
  return {};
}

}  // namespace kwire::replay
