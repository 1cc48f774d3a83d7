// Shape rules of the comparison: what makes two values the same though they
// are written differently (a set in another order, struct elements in another
// order, a subtree as canonical JSON), how the elements of two arrays pair up,
// and which differences follow from the clusters' sizes alone (a replica count
// capped by the target's brokers, a broker list). Also how a value is written
// in a difference (json_value). Includes compare_paths only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/compare_paths.hpp"

namespace kwire::replay {

// The start of the rule of a shape difference: a difference that follows from
// the clusters' sizes alone, reported and ignored.
inline constexpr std::string_view kShapeRule = "shape: ";

// A node's value as a JSON literal, as `kwire decode -T json` writes it.
std::string json_value(const ProgramSet& ps, const Frame& f, uint32_t node);
// Literals as a JSON list: ["1","2"] -> "[1,2]".
std::string json_list(const std::vector<std::string>& literals);

// Arrays of values that Kafka treats as sets (partition numbers of an
// assignment, topic names of a subscription): compared without their order.
// Arrays of structs are always compared without order, their elements paired
// by the spec's map key (`"mapKey": true`) or else by their identity fields.
struct UnorderedArray {
  PathPattern pattern;
  std::string why;
};
const std::vector<UnorderedArray>& unordered_arrays();
// Whether the array at `segs` of `api` is one of unordered_arrays().
bool unordered_values(std::string_view api, const std::vector<std::string_view>& segs);

// Typed equality of two leaves, without rendering text: what json_value would
// render equal.
bool same_leaf(const Frame& a, uint32_t i, const Frame& b, uint32_t j);
// The same field with the same subtree, node by node, in the same order.
bool same_subtree(const Frame& a, uint32_t i, const Frame& b, uint32_t j);

// The subtree as JSON. With `segs` (the path of node i) canonical: the
// elements of struct arrays and of the unordered value arrays sorted, so that
// two subtrees equal but for the order of their sets give the same text.
void subtree_json(const ProgramSet& ps, const Frame& f, uint32_t i, std::string& out, std::string_view api = {},
                  std::vector<std::string_view>* segs = nullptr);
// Canonical JSON of a top-level field of the body.
std::string canonical_json(const ProgramSet& ps, const Frame& f, uint32_t i, std::string_view api);

// What identifies a struct element among its siblings: its map key fields
// (the spec's), else its topic / partition / group / member fields, as JSON
// literals; empty when it has none.
std::string element_identity(const ProgramSet& ps, const Frame& f, uint32_t element);

// Pairs the recorded elements of an array of structs with the live ones, the
// order of a response array carrying no meaning (brokers fill them from hash
// maps): equal elements first (`rec_json`, `live_json`: canonical JSON), then
// the rest by identity (`rec_id`, `live_id`, element_identity), then the
// recorded ones without identity with the live ones left, by position. Gives
// for each recorded element the index of its live one (-1: none); `taken`
// says which live elements have a recorded one.
std::vector<int64_t> pair_elements(const std::vector<std::string>& rec_json, const std::vector<std::string>& live_json,
                                   const std::vector<std::string>& rec_id, const std::vector<std::string>& live_id,
                                   std::vector<bool>& taken);

// The brokers of the capture's cluster and of the target (0: not known), and
// the differences that follow from their sizes alone.
struct ClusterSizes {
  int recorded = 0, target = 0;
  // A count of replicas (a replica list, a replication factor) r recorded and
  // l live: capped at the target's brokers, or each the whole of its cluster
  // (a broker default).
  bool replica_count(int64_t r, int64_t l) const;
  // A count a config caps at the cluster's size: as replica_count, or one the
  // smaller cluster capped at its size where the other has another value its
  // size allows (transaction.state.log.min.isr: 1 on one broker, 2 on three).
  bool config_cap(int64_t r, int64_t l) const;
  // A list of every broker: r elements recorded, l live.
  bool broker_list(size_t r, size_t l) const;
  // A controller quorum of r controllers recorded, l live.
  bool quorum(size_t r, size_t l) const;
  std::string replicas_why() const;
  std::string brokers_why() const;
  std::string replica_config_why(std::string_view config) const;
  std::string quorum_why(std::string_view config, size_t r, size_t l) const;
};
// A config whose value counts replicas: a replication factor, a minimum in sync.
bool replica_config(std::string_view name);
// A config value as a count; false when it is none.
bool parse_count(std::string_view s, int64_t& v);

}  // namespace kwire::replay
