// Field-by-field comparison of a live response with the recorded one (after
// ReplayState::translate_response), with rules for what may differ. Paths use
// the JSON names of `kwire decode -T json`: "body.results[0].errorCode".
//
// This file owns the walk that pairs the two answers field by field and the
// expectations; what the walk decides at each field comes from the parts
// below it, which it includes (and so offers to its callers):
//   compare_paths   how fields are named and matched by rules;
//   compare_shape   what is the same though written differently, and the
//                   differences that follow from the clusters' sizes;
//   compare_ignore  the fields whose values are the target's own;
//   compare_roles   the fields compared across a member's answers;
//   compare_nodes   the target's nodes an answer names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/compare_ignore.hpp"
#include "replay/compare_nodes.hpp"
#include "replay/compare_paths.hpp"
#include "replay/compare_roles.hpp"
#include "replay/compare_shape.hpp"

namespace kwire::replay {

struct Expectation;
struct ExpectRule {
  PathPattern pattern;  // indices allowed in the text: "body.results[0].errorCode"
  std::string path;     // the path as written (without the api)
  std::string value;    // text: number, true/false, null, string content, error name
};

struct CompareOptions {
  std::vector<IgnoreRule> ignore;
  std::vector<ExpectRule> expect;
  // Recorded broker addresses -> the target's, for DescribeConfigs endpoint
  // values (null: no address maps, endpoints are compared as they are).
  const EndpointMap* endpoints = nullptr;
  // How many brokers the capture's cluster and the target have (0: not
  // known). Where they differ, what follows from that alone is a shape
  // difference (a Difference whose rule starts with kShapeRule, ignored): a
  // replica count the target cannot hold or fills to its size, its broker
  // list, its controller quorum. A replica count that differs otherwise is a
  // regression.
  int recorded_brokers = 0, target_brokers = 0;
  // The target's node ids: a partition's leader in an answer must be one of
  // them (else a regression), whatever id the capture had. So must every node
  // an answer names with its endpoint (FindCoordinator's coordinator, Metadata's
  // brokers, the KIP-951 leader hints of Produce and Fetch: a hint's leader must
  // also be among the answer's nodeEndpoints), at the endpoint the target gives
  // that node elsewhere on the same listener (`target_endpoints`, node ->
  // "host:port", where known).
  std::vector<int32_t> target_nodes;
  const std::map<int32_t, std::string>* target_endpoints = nullptr;
  // The replay's run on the wall clock (ms since the epoch; 0: not known):
  // a wall-clock time the target stamps (wall_clock_fields()) is compared as
  // a time of this run, not as the recorded value.
  int64_t run_from_ms = 0, run_to_ms = 0;
};
// Appends the differences between `recorded` and `live` (both decoded as the
// same api and version) to `out`, ignored ones flagged; then the expectations
// that `live` does not meet.
void compare(const ProgramSet& ps, const Frame& recorded, const Frame& live, const CompareOptions& opts,
             std::vector<Difference>& out, StickyMemory* memory = nullptr, const std::string& member = {});
// Only the expectations (when there is nothing recorded to compare with).
void check_expectations(const ProgramSet& ps, const Frame& live, const std::vector<ExpectRule>& expect,
                        std::vector<Difference>& out);

}  // namespace kwire::replay
