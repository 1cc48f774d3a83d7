// Node checks of the comparison. The ignore rules pass over node ids, hosts
// and ports, since they are the target's own; what they pass over is checked
// here instead: each node an answer names must be one of the target's
// brokers, at the endpoint the target gives it. Includes compare_paths only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/compare_paths.hpp"

namespace kwire::replay {

// Whether `id` is among the target's node ids.
bool target_node(const std::vector<int32_t>& target_nodes, int64_t id);
// Whether the integer `value` at field `field` of `api` is a partition's
// leader (Metadata, DescribeTopicPartitions) that is none of the target's
// brokers: a regression whatever the ids. Never with no target nodes known.
bool foreign_leader(std::string_view api, std::string_view field, int64_t value, const std::vector<int32_t>& target_nodes);

// What the answer `live` says of the target's nodes (`target_nodes`; none
// known: nothing is checked): each node it names with an endpoint is one of
// the target's, at the endpoint the target gives it elsewhere
// (`target_endpoints`, node -> "host:port", where known), and each leader hint
// names a node of the target that the answer's nodeEndpoints list. Appends a
// regression to `out` for each that is not.
void check_target_nodes(const ProgramSet& ps, const Frame& live, const std::vector<int32_t>& target_nodes,
                        const std::map<int32_t, std::string>* target_endpoints, std::vector<Difference>& out);

}  // namespace kwire::replay
