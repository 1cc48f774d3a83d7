#include "replay/routing.hpp"

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
