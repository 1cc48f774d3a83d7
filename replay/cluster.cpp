#include "replay/cluster.hpp"

#include <algorithm>

#include "replay/routing.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

namespace {

constexpr int64_t kNotLeaderOrFollower = 6;
constexpr int64_t kNotCoordinator = 16;

uint32_t index_of(const Frame& f, const Node* n) { return static_cast<uint32_t>(n - f.nodes.data()); }

// The elements of array field `name` under `parent`.
template <class Fn>
void for_each_element(const Frame& f, const ProgramSet& ps, uint32_t parent, std::string_view name, Fn fn) {
  const Node* a = find_field(f, ps, parent, name);
  if (!a || a->is_null() || a->type != WireType::Array) return;
  for (uint32_t el : Children(f, index_of(f, a))) fn(el);
}

int64_t int_field(const Frame& f, const ProgramSet& ps, uint32_t parent, std::string_view name, int64_t missing) {
  const Node* n = find_field(f, ps, parent, name);
  return n && !n->is_null() ? n->v.i : missing;
}

std::string string_field(const Frame& f, const ProgramSet& ps, uint32_t parent, std::string_view name) {
  const Node* n = find_field(f, ps, parent, name);
  return n && !n->is_null() && n->type == WireType::String ? std::string(n->str()) : std::string();
}

std::string uuid_field(const Frame& f, const ProgramSet& ps, uint32_t parent, std::string_view name) {
  const Node* n = find_field(f, ps, parent, name);
  return n && n->type == WireType::Uuid ? wire::uuid_to_string(n->v.p) : std::string();
}

}  // namespace

void ClusterView::learn(const Frame& request, const Frame& response, const ProgramSet& ps) {
  if (!response.program || !response.body || !response.ok()) return;
  // Brokers' own traffic tells of other listeners: a KRaft voter's Fetch
  // answer names the controllers' endpoints (NodeEndpoints), not the brokers'.
  if (broker_traffic(request, ps)) return;
  const std::string_view api = response.program->api_name;
  if (api == "Metadata") learn_metadata(response, ps);
  else if (api == "DescribeCluster") learn_describe_cluster(response, ps);
  else if (api == "FindCoordinator") learn_find_coordinator(request, response, ps);
  else if (api == "Produce" || api == "Fetch") learn_leader_hints(response, ps);
  if (api == "Fetch") learn_read_replicas(request, response, ps);
}

void ClusterView::learn_broker(const Frame& f, const ProgramSet& ps, uint32_t el, std::string_view id_field) {
  const int64_t id = int_field(f, ps, el, id_field, kUnknown);
  const std::string host = string_field(f, ps, el, "Host");
  const int64_t port = int_field(f, ps, el, "Port", -1);
  if (id < 0 || host.empty() || port <= 0) return;
  const std::string endpoint = host + ":" + std::to_string(port);
  brokers_[static_cast<int32_t>(id)] = endpoint;
  node_at_[endpoint] = static_cast<int32_t>(id);
  if (const Node* rack = find_field(f, ps, el, "Rack")) {
    if (rack->is_null() || rack->str().empty()) racks_.erase(static_cast<int32_t>(id));
    else racks_[static_cast<int32_t>(id)] = std::string(rack->str());
  }
}

void ClusterView::learn_metadata(const Frame& f, const ProgramSet& ps) {
  for_each_element(f, ps, f.body, "Brokers", [&](uint32_t el) { learn_broker(f, ps, el, "NodeId"); });
  controller_ = static_cast<int32_t>(int_field(f, ps, f.body, "ControllerId", controller_));
  for_each_element(f, ps, f.body, "Topics", [&](uint32_t topic) {
    if (int_field(f, ps, topic, "ErrorCode", 0) != 0) return;
    const std::string name = string_field(f, ps, topic, "Name");
    if (name.empty()) return;
    if (const std::string id = uuid_field(f, ps, topic, "TopicId"); !id.empty()) topic_ids_[id] = name;
    auto& parts = leaders_[name];
    for_each_element(f, ps, topic, "Partitions", [&](uint32_t p) {
      const int64_t index = int_field(f, ps, p, "PartitionIndex", -1);
      const int64_t error = int_field(f, ps, p, "ErrorCode", 0);
      const int64_t leader = int_field(f, ps, p, "LeaderId", kUnknown);
      if (index < 0) return;
      // LEADER_NOT_AVAILABLE and the like: no leader now, whatever was known.
      parts[static_cast<int32_t>(index)] = error == 0 ? static_cast<int32_t>(leader) : kUnknown;
      if (const Node* r = find_field(f, ps, p, "ReplicaNodes"); r && !r->is_null() && r->type == WireType::Array) {
        auto& nodes = replicas_[name][static_cast<int32_t>(index)];
        nodes.clear();
        for (uint32_t n : Children(f, index_of(f, r))) nodes.push_back(static_cast<int32_t>(f.nodes[n].v.i));
      }
    });
  });
}

void ClusterView::learn_describe_cluster(const Frame& f, const ProgramSet& ps) {
  if (int_field(f, ps, f.body, "ErrorCode", 0) != 0) return;
  // EndpointType 2 lists the controllers: not where clients' requests go.
  if (int_field(f, ps, f.body, "EndpointType", 1) != 1) return;
  for_each_element(f, ps, f.body, "Brokers", [&](uint32_t el) { learn_broker(f, ps, el, "BrokerId"); });
  controller_ = static_cast<int32_t>(int_field(f, ps, f.body, "ControllerId", controller_));
}

void ClusterView::learn_find_coordinator(const Frame& request, const Frame& response, const ProgramSet& ps) {
  if (!request.body) return;
  const auto type = static_cast<int8_t>(int_field(request, ps, request.body, "KeyType", 0));
  auto learn_one = [&](const std::string& key, int64_t error, int64_t node, uint32_t el) {
    const auto k = std::make_pair(type, key);
    if (error == kNotCoordinator) coordinators_.erase(k);
    if (error != 0 || node < 0) return;
    coordinators_[k] = static_cast<int32_t>(node);
    learn_broker(response, ps, el, "NodeId");
  };
  if (find_field(response, ps, response.body, "Coordinators")) {  // v4+: a batch of keys
    for_each_element(response, ps, response.body, "Coordinators", [&](uint32_t el) {
      learn_one(string_field(response, ps, el, "Key"), int_field(response, ps, el, "ErrorCode", 0),
                int_field(response, ps, el, "NodeId", kUnknown), el);
    });
  } else {  // v0-3: the request's one key
    learn_one(string_field(request, ps, request.body, "Key"), int_field(response, ps, response.body, "ErrorCode", 0),
              int_field(response, ps, response.body, "NodeId", kUnknown), response.body);
  }
}

// KIP-951: a partition answered NOT_LEADER_OR_FOLLOWER with the leader the
// broker knows (CurrentLeader), and NodeEndpoints saying where it listens.
void ClusterView::learn_leader_hints(const Frame& f, const ProgramSet& ps) {
  for_each_element(f, ps, f.body, "NodeEndpoints", [&](uint32_t el) { learn_broker(f, ps, el, "NodeId"); });
  const bool produce = f.program->api_name == "Produce";
  for_each_element(f, ps, f.body, "Responses", [&](uint32_t topic) {
    std::string name = string_field(f, ps, topic, produce ? "Name" : "Topic");
    if (name.empty()) {
      auto it = topic_ids_.find(uuid_field(f, ps, topic, "TopicId"));
      if (it == topic_ids_.end()) return;
      name = it->second;
    }
    for_each_element(f, ps, topic, produce ? "PartitionResponses" : "Partitions", [&](uint32_t p) {
      const int64_t index = int_field(f, ps, p, produce ? "Index" : "PartitionIndex", -1);
      if (index < 0 || int_field(f, ps, p, "ErrorCode", 0) != kNotLeaderOrFollower) return;
      int32_t hint = kUnknown;
      if (const Node* current = find_field(f, ps, p, "CurrentLeader"))
        hint = static_cast<int32_t>(int_field(f, ps, index_of(f, current), "LeaderId", kUnknown));
      leaders_[name][static_cast<int32_t>(index)] = hint;
    });
  });
}

int32_t ClusterView::leader(std::string_view topic, int32_t partition) const {
  auto t = leaders_.find(topic);
  if (t == leaders_.end()) return kUnknown;
  auto p = t->second.find(partition);
  return p == t->second.end() ? kUnknown : p->second;
}

// KIP-392: a leader answers a fetch from a client in a rack with the replica
// it prefers that client to read from (PreferredReadReplica, Fetch v11+); a
// read replica that answers with an error is given up, as the client does.
void ClusterView::learn_read_replicas(const Frame& request, const Frame& f, const ProgramSet& ps) {
  if (!request.body) return;
  const std::string rack = string_field(request, ps, request.body, "RackId");
  if (rack.empty()) return;
  for_each_element(f, ps, f.body, "Responses", [&](uint32_t topic) {
    std::string name = string_field(f, ps, topic, "Topic");
    if (name.empty()) {
      auto it = topic_ids_.find(uuid_field(f, ps, topic, "TopicId"));
      if (it == topic_ids_.end()) return;
      name = it->second;
    }
    for_each_element(f, ps, topic, "Partitions", [&](uint32_t p) {
      const int64_t index = int_field(f, ps, p, "PartitionIndex", -1);
      if (index < 0) return;
      const auto key = std::make_tuple(rack, name, static_cast<int32_t>(index));
      const int64_t preferred = int_field(f, ps, p, "PreferredReadReplica", -1);
      if (preferred >= 0) preferred_[key] = static_cast<int32_t>(preferred);
      else if (int_field(f, ps, p, "ErrorCode", 0) != 0) preferred_.erase(key);
    });
  });
}

int32_t ClusterView::read_replica(std::string_view topic, int32_t partition, std::string_view rack) const {
  if (rack.empty()) return kUnknown;
  if (auto it = preferred_.find(std::make_tuple(std::string(rack), std::string(topic), partition)); it != preferred_.end())
    return it->second;
  auto t = replicas_.find(topic);
  if (t == replicas_.end()) return kUnknown;
  auto p = t->second.find(partition);
  if (p == t->second.end()) return kUnknown;
  const int32_t lead = leader(topic, partition);
  if (lead != kUnknown && this->rack(lead) == rack) return lead;
  for (int32_t n : p->second)
    if (this->rack(n) == rack) return n;
  return kUnknown;
}

std::string ClusterView::rack(int32_t node) const {
  auto it = racks_.find(node);
  return it == racks_.end() ? std::string() : it->second;
}

int32_t ClusterView::coordinator(CoordinatorKey type, std::string_view key) const {
  auto it = coordinators_.find({static_cast<int8_t>(type), std::string(key)});
  return it == coordinators_.end() ? kUnknown : it->second;
}

std::string ClusterView::endpoint(int32_t node) const {
  auto it = brokers_.find(node);
  return it == brokers_.end() ? std::string() : it->second;
}

size_t ClusterView::partitions() const {
  size_t n = 0;
  for (const auto& [topic, parts] : leaders_) n += parts.size();
  return n;
}

void ClusterView::forget_leader(std::string_view topic, int32_t partition) {
  if (auto t = leaders_.find(topic); t != leaders_.end()) t->second[partition] = kUnknown;
}

void ClusterView::forget_coordinator(CoordinatorKey type, std::string_view key) {
  coordinators_.erase({static_cast<int8_t>(type), std::string(key)});
}

Placement place(const Frame& request, const ProgramSet& ps, const ClusterView& view,
                const std::function<std::string(std::string_view)>& topic_of_id, std::string_view topic_prefix,
                std::string_view group_prefix) {
  Placement out;
  if (!request.program || !request.body) return out;
  out.role = role_of(request, ps);
  std::vector<int32_t> seen;
  auto found = [&](int32_t node, const std::string& what) {
    if (node == ClusterView::kUnknown) {
      if (out.unknown.empty()) out.unknown = what;
    } else if (std::find(seen.begin(), seen.end(), node) == seen.end()) {
      seen.push_back(node);
    }
  };
  if (out.role == Role::PartitionLeader) {
    for (const PartitionRef& p : partitions_of(request, ps)) {
      const std::string name = p.by_id ? topic_of_id(p.topic) : p.topic;
      found(name.empty() ? ClusterView::kUnknown : view.leader(std::string(topic_prefix) + name, p.partition),
            (name.empty() ? p.topic : name) + "-" + std::to_string(p.partition));
    }
  } else if (out.role == Role::GroupCoordinator || out.role == Role::TxnCoordinator) {
    const bool group = out.role == Role::GroupCoordinator;
    for (const std::string& key : coordinator_keys(request, ps, out.role))
      found(view.coordinator(group ? CoordinatorKey::Group : CoordinatorKey::Transaction,
                             (group ? std::string(group_prefix) : std::string()) + key),
            key);
  }
  out.nodes = static_cast<uint32_t>(seen.size());
  if (!seen.empty()) out.node = seen.front();
  return out;
}

}  // namespace kwire::replay
