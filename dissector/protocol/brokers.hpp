// Which node id a broker address is, as the capture's own answers say: the
// brokers a Metadata or DescribeCluster response lists (node id, host,
// port). Shared by the views that name brokers (kwire latency, kwire
// streams).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire {

// Adds "host:port" -> node id for every broker a Metadata (api key 3) or
// DescribeCluster (60) response lists; an IPv6 host is bracketed, as
// Endpoint::str() writes it. A DescribeCluster answer about controllers
// (EndpointType 2) and other frames add nothing.
void learn_broker_nodes(const Frame& f, const ProgramSet& ps, std::map<std::string, int32_t>& nodes);

// The node id of an address, or -1 when no answer named it.
int32_t broker_node(const std::map<std::string, int32_t>& nodes, const std::string& address);
// "node 2 127.0.0.12:9092", or the address alone when no answer named it.
std::string broker_name(const std::map<std::string, int32_t>& nodes, const std::string& address);

}  // namespace kwire
