// What a client knows of a cluster, learned as a client learns it: the brokers
// (node id, endpoint), each partition's leader, and the coordinator of each
// group and transactional id, from the answers to Metadata, DescribeCluster
// and FindCoordinator, and the leader hints of Produce and Fetch answers
// (KIP-951); with racks, each broker's rack, each partition's replicas and the
// read replica a leader prefers for a client's rack (KIP-392, follower
// fetching). Replay keeps one for the capture (where each role lived when it
// was recorded) and one for the target (where it lives now).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/routing.hpp"

namespace kwire::replay {

// FindCoordinator's key types.
enum class CoordinatorKey : int8_t { Group = 0, Transaction = 1, Share = 2 };

class ClusterView {
 public:
  static constexpr int32_t kUnknown = -1;

  // Learns from one exchange of a client's; requests and answers of other
  // apis, and brokers' own traffic (replay/routing.hpp), are ignored.
  // Errors teach nothing: an answer with a partition's or a key's error leaves
  // what was known of it unchanged, except NOT_LEADER_OR_FOLLOWER and
  // NOT_COORDINATOR, which forget it.
  void learn(const Frame& request, const Frame& response, const ProgramSet& ps);

  int32_t leader(std::string_view topic, int32_t partition) const;
  // Where a client in `rack` fetches `topic`-`partition` from (KIP-392): the
  // read replica the leader last preferred for that rack, else a replica in
  // that rack (the leader when it is one), else kUnknown.
  int32_t read_replica(std::string_view topic, int32_t partition, std::string_view rack) const;
  // The rack of a node, or empty (none, or not known).
  std::string rack(int32_t node) const;
  int32_t coordinator(CoordinatorKey type, std::string_view key) const;
  // "host:port" of a node, or empty.
  std::string endpoint(int32_t node) const;

  const std::map<int32_t, std::string>& brokers() const { return brokers_; }
  // The node an endpoint was said to be, on any listener answers came from
  // ("host:port"), or kUnknown.
  int32_t node_at(std::string_view endpoint) const {
    auto it = node_at_.find(endpoint);
    return it == node_at_.end() ? kUnknown : it->second;
  }
  size_t partitions() const;
  int32_t controller() const { return controller_; }

  void forget_leader(std::string_view topic, int32_t partition);
  void forget_coordinator(CoordinatorKey type, std::string_view key);

 private:
  void learn_metadata(const Frame& f, const ProgramSet& ps);
  void learn_describe_cluster(const Frame& f, const ProgramSet& ps);
  void learn_find_coordinator(const Frame& request, const Frame& response, const ProgramSet& ps);
  void learn_leader_hints(const Frame& f, const ProgramSet& ps);
  void learn_read_replicas(const Frame& request, const Frame& f, const ProgramSet& ps);
  void learn_broker(const Frame& f, const ProgramSet& ps, uint32_t element, std::string_view id_field);

  std::map<int32_t, std::string> brokers_;
  std::map<std::string, int32_t, std::less<>> node_at_;
  std::map<std::string, std::map<int32_t, int32_t>, std::less<>> leaders_;  // topic -> partition -> node
  std::map<std::string, std::string, std::less<>> topic_ids_;              // topic id (Kafka's text form) -> name
  std::map<int32_t, std::string> racks_;                                    // node -> rack
  std::map<std::string, std::map<int32_t, std::vector<int32_t>>, std::less<>> replicas_;  // topic -> partition -> nodes
  // (rack, topic, partition) -> the read replica the leader preferred for that rack
  std::map<std::tuple<std::string, std::string, int32_t>, int32_t> preferred_;
  std::map<std::pair<int8_t, std::string>, int32_t> coordinators_;
  int32_t controller_ = kUnknown;
};

// Where a recorded request goes on a cluster: the node where its role lives.
struct Placement {
  Role role = Role::AnyBroker;
  int32_t node = ClusterView::kUnknown;  // unknown: the role has no node (any broker) or none is known yet
  // How many distinct nodes the request's partitions (or keys) live on:
  // several, and the request would have to be split; `node` is the first's.
  uint32_t nodes = 0;
  std::string unknown;                   // the first partition or key whose node is not known: "orders-3"
};
// `topic_of_id` names a recorded topic id (Kafka's text form); the prefixes
// are --rename-topic's and --rename-group's, applied as the request is sent.
Placement place(const Frame& request, const ProgramSet& ps, const ClusterView& view,
                const std::function<std::string(std::string_view)>& topic_of_id, std::string_view topic_prefix,
                std::string_view group_prefix);

}  // namespace kwire::replay
