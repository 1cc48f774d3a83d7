#include "dissector/protocol/brokers.hpp"

namespace kwire {

void learn_broker_nodes(const Frame& f, const ProgramSet& ps, std::map<std::string, int32_t>& nodes) {
  if (!f.program || !f.body || f.direction != Direction::Response || (f.api_key != 3 && f.api_key != 60)) return;
  if (const Node* type = find_field(f, ps, f.body, "EndpointType"); type && type->v.i != 1) return;
  const Node* brokers = find_field(f, ps, f.body, "Brokers");
  if (!brokers || brokers->type != WireType::Array) return;
  const uint32_t array = static_cast<uint32_t>(brokers - f.nodes.data());
  for (uint32_t el : Children(f, array)) {
    const Node* id = find_field(f, ps, el, f.api_key == 3 ? "NodeId" : "BrokerId");
    const Node* host = find_field(f, ps, el, "Host");
    const Node* port = find_field(f, ps, el, "Port");
    if (!id || !host || !port || host->is_null() || id->v.i < 0) continue;
    std::string h(host->str());
    if (h.find(':') != std::string::npos) h = "[" + h + "]";
    nodes[h + ":" + std::to_string(port->v.i)] = static_cast<int32_t>(id->v.i);
  }
}

int32_t broker_node(const std::map<std::string, int32_t>& nodes, const std::string& address) {
  auto n = nodes.find(address);
  return n == nodes.end() ? -1 : n->second;
}

std::string broker_name(const std::map<std::string, int32_t>& nodes, const std::string& address) {
  const int32_t n = broker_node(nodes, address);
  return n < 0 ? address : "node " + std::to_string(n) + " " + address;
}

}  // namespace kwire
