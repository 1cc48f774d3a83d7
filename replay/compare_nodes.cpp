#include "replay/compare_nodes.hpp"

#include <algorithm>
#include <set>

namespace kwire::replay {

bool target_node(const std::vector<int32_t>& target_nodes, int64_t id) {
  return std::find(target_nodes.begin(), target_nodes.end(), id) != target_nodes.end();
}

bool foreign_leader(std::string_view api, std::string_view field, int64_t value, const std::vector<int32_t>& target_nodes) {
  if (target_nodes.empty() || field != "leaderId" || (api != "Metadata" && api != "DescribeTopicPartitions")) return false;
  return value >= 0 && !target_node(target_nodes, value);
}

namespace {

class NodeCheck {
 public:
  NodeCheck(const ProgramSet& ps, const Frame& f, const std::vector<int32_t>& nodes,
            const std::map<int32_t, std::string>* endpoints, std::vector<Difference>& out)
      : ps_(ps), f_(f), nodes_(nodes), endpoints_(endpoints), out_(out) {}

  void run() {
    if (nodes_.empty() || !f_.body || !f_.program) return;
    const std::string_view api = f_.program->api_name;
    if (api != "Produce" && api != "Fetch" && api != "FindCoordinator" && api != "Metadata") return;
    const Fields top = fields(f_.body);
    if (top.endpoints) {
      has_endpoints_ = true;
      for (uint32_t el : Children(f_, top.endpoints))
        if (const uint32_t id = fields(el).id) listed_.insert(f_.nodes[id].v.i);
    }
    walk(f_.body);
  }

 private:
  // The children of a struct this check reads (0: absent).
  struct Fields {
    uint32_t id = 0, host = 0, port = 0, error = 0, current = 0, leader = 0, endpoints = 0;
  };
  Fields fields(uint32_t s) const {
    Fields out;
    for (uint32_t c : Children(f_, s)) {
      const Node& n = f_.nodes[c];
      if (n.desc == kDescUnknownTag || n.is_null()) continue;
      const std::string_view name = ps_.field(n.desc).name;
      if (name == "NodeId") out.id = c;
      else if (name == "Host") out.host = c;
      else if (name == "Port") out.port = c;
      else if (name == "ErrorCode") out.error = c;
      else if (name == "CurrentLeader") out.current = c;
      else if (name == "LeaderId") out.leader = c;
      else if (name == "NodeEndpoints") out.endpoints = c;
    }
    return out;
  }
  bool target_node(int64_t id) const { return replay::target_node(nodes_, id); }
  // The path of node n, as the comparison writes it ("body.coordinators[0].nodeId").
  std::string path_of(uint32_t n) const {
    std::vector<std::string> segs;
    while (n != f_.body) {
      const uint32_t parent = f_.nodes[n].parent;
      if (f_.nodes[parent].type == WireType::Array) {
        uint32_t i = 0;
        for (uint32_t el : Children(f_, parent)) {
          if (el == n) break;
          ++i;
        }
        segs.push_back("[" + std::to_string(i) + "]");
      } else {
        segs.push_back("." + std::string(ps_.field(f_.nodes[n].desc).json_name));
      }
      n = parent;
    }
    std::string out = "body";
    for (auto it = segs.rbegin(); it != segs.rend(); ++it) out += *it;
    return out;
  }
  void regression(uint32_t at, int64_t id, std::string why) {
    out_.push_back({path_of(at), "\"(the target's node)\"", std::to_string(id), std::move(why), false});
  }

  void walk(uint32_t n) {
    const Node& node = f_.nodes[n];
    if (node.type == WireType::Array) {
      if (!node.is_null())
        for (uint32_t el : Children(f_, n)) walk(el);
      return;
    }
    if (node.type != WireType::Struct && n != f_.body) return;
    const Fields here = fields(n);
    endpoint(here);
    if (here.current) hint(fields(here.current));
    for (uint32_t c : Children(f_, n))
      if (f_.nodes[c].desc != kDescUnknownTag && (f_.nodes[c].type == WireType::Struct || f_.nodes[c].type == WireType::Array))
        walk(c);
  }

  // A node named with its endpoint (NodeId, Host, Port; with an ErrorCode, only
  // where it is 0).
  void endpoint(const Fields& s) {
    if (!s.id || !s.host || !s.port || f_.nodes[s.id].v.i < 0) return;
    if (s.error && f_.nodes[s.error].v.i != 0) return;
    const int64_t node = f_.nodes[s.id].v.i;
    if (!target_node(node)) {
      regression(s.id, node, "node " + std::to_string(node) + " is none of the target's brokers");
      return;
    }
    if (!endpoints_) return;
    auto it = endpoints_->find(static_cast<int32_t>(node));
    if (it == endpoints_->end()) return;
    const std::string_view h = f_.nodes[s.host].str();
    const std::string at = (h.find(':') != std::string_view::npos ? "[" + std::string(h) + "]" : std::string(h)) + ":" +
                           std::to_string(f_.nodes[s.port].v.i);
    if (at != it->second)
      out_.push_back({path_of(s.host), '"' + it->second + '"', '"' + at + '"',
                      "node " + std::to_string(node) + " is at " + it->second + " by the target's Metadata", false});
  }

  // A KIP-951 leader hint (CurrentLeader: LeaderId, LeaderEpoch).
  void hint(const Fields& current) {
    if (!current.leader || f_.nodes[current.leader].v.i < 0) return;
    const int64_t node = f_.nodes[current.leader].v.i;
    if (!target_node(node)) regression(current.leader, node, "leader hint " + std::to_string(node) + " is none of the target's brokers");
    else if (has_endpoints_ && !listed_.count(node))
      regression(current.leader, node, "leader hint " + std::to_string(node) + " is not among the answer's nodeEndpoints");
  }

  const ProgramSet& ps_;
  const Frame& f_;
  const std::vector<int32_t>& nodes_;
  const std::map<int32_t, std::string>* endpoints_;
  std::vector<Difference>& out_;
  bool has_endpoints_ = false;
  std::set<int64_t> listed_;
};

}  // namespace

void check_target_nodes(const ProgramSet& ps, const Frame& live, const std::vector<int32_t>& target_nodes,
                        const std::map<int32_t, std::string>* target_endpoints, std::vector<Difference>& out) {
  NodeCheck(ps, live, target_nodes, target_endpoints, out).run();
}

}  // namespace kwire::replay
