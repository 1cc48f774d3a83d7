// Where a recorded request belongs in a cluster: the role it is sent to (the
// leader of its partitions, a group's or a transaction's coordinator, any
// broker), and which requests only brokers and controllers send to each other
// and a replay must never send (a follower's fetch, a transaction marker).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire::replay {

enum class Role : uint8_t {
  AnyBroker,         // Metadata, ApiVersions, admin requests (KRaft forwards writes to the controller)
  PartitionLeader,   // Produce, Fetch, ListOffsets, ...: the leader of each partition named
  GroupCoordinator,  // every group API, and TxnOffsetCommit: the coordinator of the group
  TxnCoordinator,    // InitProducerId with a transactional id, AddOffsetsToTxn, EndTxn, ...
  ShareCoordinator,  // share-group state: asked by share-partition leaders, never by clients
  EachBroker,        // the answer is the broker's own (ListGroups, DescribeLogDirs): asked per broker
  Controller,        // KRaft controller RPCs and the ZooKeeper-era broker RPCs
};
std::string_view role_name(Role r);

// The role of an api, by name; every api kwire decodes has one.
Role role_of(std::string_view api);
// The role of an api version's requests (the controller's, by the spec's listeners).
Role role_of(const MessageProgram& request);
// The role of a recorded request: InitProducerId without a transactional id
// goes to any broker.
Role role_of(const Frame& request, const ProgramSet& ps);

// A partition a request names: its topic by name, or by id (Kafka's text form of
// the uuid, `by_id`) where the request names topics by id (Fetch v13+, Produce v13+).
struct PartitionRef {
  std::string topic;
  bool by_id = false;
  int32_t partition = -1;
  bool operator==(const PartitionRef&) const = default;
};
// Every partition a request asks about, in order; the partitions a fetch
// session forgets are not asked about.
std::vector<PartitionRef> partitions_of(const Frame& request, const ProgramSet& ps);
// The same, with where each lies in the frame: its topic's element and its own
// (a partition's struct, or a plain index).
struct PartitionSlot {
  PartitionRef ref;
  uint32_t topic = 0, element = 0;
};
std::vector<PartitionSlot> partition_slots(const Frame& request, const ProgramSet& ps);

// The keys whose coordinator a request goes to, in order, without repeats: the
// group ids of a group coordinator's request (TxnOffsetCommit's group), the
// transactional ids of a transaction coordinator's.
std::vector<std::string> coordinator_keys(const Frame& request, const ProgramSet& ps, Role role);

// Traffic between brokers (or to the controller) that a client never sends.
struct BrokerTraffic {
  std::string kind;    // "replica fetch", "controller", "transaction marker", ...; empty: a client's
  std::string detail;  // what showed it: "Fetch v17 with replica id 2"
  explicit operator bool() const { return !kind.empty(); }
};
BrokerTraffic broker_traffic(const Frame& request, const ProgramSet& ps);

// The kinds broker_traffic() names, in report order.
const std::vector<std::string_view>& broker_traffic_kinds();

}  // namespace kwire::replay
