// Field-by-field comparison of a live response with the recorded one (after
// ReplayState::translate_response), with rules for what may differ. Paths use
// the JSON names of `kwire decode -T json`: "body.results[0].errorCode".
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire::replay {

// "[Api:]PATH": PATH is dot-separated JSON names without indices; a segment
// may hold * and ? wildcards, and ** stands for any number of segments.
struct PathPattern {
  std::string api;                    // empty: every api
  std::vector<std::string> segments;
  std::string text;                   // as written
  bool matches(std::string_view api_name, const std::vector<std::string_view>& path) const;
  // The field itself, not something under it.
  bool matches_exactly(std::string_view api_name, const std::vector<std::string_view>& path) const;
};
bool parse_pattern(const std::string& text, PathPattern& out, std::string& error);
// A difference's path without its indices: "body.responses[0].partitions[+1].errorCode"
// -> "body.responses.partitions.errorCode".
std::string plain_path(const std::string& path);

// A rule table of kwire's own, (pattern, why) pairs, as rules of type T (a
// struct with `pattern` and `why`). The patterns are literals known to parse.
template <class T>
std::vector<T> pattern_table(std::initializer_list<std::pair<const char*, const char*>> table) {
  std::vector<T> out;
  std::string error;
  for (const auto& [text, why] : table) {
    T rule{};
    parse_pattern(text, rule.pattern, error);
    rule.why = why;
    out.push_back(std::move(rule));
  }
  return out;
}

struct IgnoreRule {
  PathPattern pattern;   // covers the field and everything under it
  std::string why;
  // Only elements of the array at the pattern that one side lists and the
  // other does not (which partitions an incremental fetch returns is timing);
  // elements both sides list are still compared.
  bool presence_only = false;
};
// The volatile fields replay ignores unless told otherwise (kwire replay --list-rules).
std::vector<IgnoreRule> default_ignore_rules();

struct Expectation;
struct ExpectRule {
  PathPattern pattern;  // indices allowed in the text: "body.results[0].errorCode"
  std::string path;     // the path as written (without the api)
  std::string value;    // text: number, true/false, null, string content, error name
};

struct Difference {
  std::string path;       // "body.results[0].errorCode"
  std::string recorded;   // JSON literal
  std::string replayed;   // JSON literal
  std::string rule;       // the ignore rule that covers it, or "expect" / empty
  bool ignored = false;
  // Error codes also by name ("NONE", "MESSAGE_TOO_LARGE"); empty otherwise.
  std::string recorded_name, replayed_name;
  std::string recorded_text() const { return recorded_name.empty() ? recorded : recorded + " " + recorded_name; }
  std::string replayed_text() const { return replayed_name.empty() ? replayed : replayed + " " + replayed_name; }
};

struct EndpointMap;
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
inline constexpr std::string_view kWallClockRule = "a wall-clock time of the replay's run";

// Fields that hold the time the broker stamped something at (a transaction's
// start): a value of the capture's day on one side and of the replay's on the
// other. Compared as times: -1 (none) where the capture has none, and else a
// time within the replay's run (CompareOptions::run_from_ms/run_to_ms, with a
// second of slack for clocks read apart). Recorded record timestamps are not
// here: they move with the replay's clock (replay/timeshift.hpp).
struct WallClockField {
  PathPattern pattern;
  std::string why;
};
const std::vector<WallClockField>& wall_clock_fields();
inline constexpr std::string_view kShapeRule = "shape: ";

// Arrays of values that Kafka treats as sets (partition numbers of an
// assignment, topic names of a subscription): compared without their order.
// Arrays of structs are always compared without order, their elements paired
// by the spec's map key (`"mapKey": true`) or else by their identity fields.
struct UnorderedArray {
  PathPattern pattern;
  std::string why;
};
const std::vector<UnorderedArray>& unordered_arrays();

// Broker configs whose values describe the host rather than the broker's
// behaviour (DescribeConfigs results): listener endpoints, compared after the
// recorded broker addresses in them are mapped to the target's (EndpointMap);
// per-host paths, ignored. Every other config value is compared, so a changed
// default (num.partitions) is a regression.
struct HostConfig {
  std::string_view name;   // "listeners"
  bool endpoints;          // true: endpoints mapped, then compared; false: ignored
  std::string_view why;
};
const std::vector<HostConfig>& host_configs();

// Recorded broker addresses and the target's that stand for them: from
// --target/--map (each recorded broker a session went to) and from the broker
// lists of Metadata and DescribeCluster answers (recorded and live paired by
// node id). A recorded endpoint is mapped by its exact HOST:PORT, else by its
// port alone when that port belongs to exactly one recorded broker (a listener
// written "localhost:9092" or ":9092" while the client connected to
// 127.0.0.1:9092); the host as written is then kept and compared.
struct EndpointMap {
  std::map<std::string, std::string> addresses;   // recorded "host:port" -> live "host:port"
  void add(const std::string& recorded, const std::string& live) { addresses[recorded] = live; }
  // Recorded port -> live port, when the recorded port is one recorded broker's only
  // (or all the recorded brokers on it map to one live port: a cluster on one port).
  std::map<uint16_t, uint16_t> ports() const;
  // Recorded host -> live host, when every address of the recorded host maps
  // to that one host: a broker's other listeners (its controller's) moved with it.
  std::map<std::string, std::string> hosts() const;
};
// One item of a listener list: "NAME://HOST:PORT", "ID@HOST:PORT" or "HOST:PORT".
struct EndpointItem {
  std::string prefix;   // "NAME://", "1@" or empty
  std::string host;     // without brackets
  int port = -1;        // -1: none
};
std::vector<EndpointItem> parse_endpoints(std::string_view value);
// `value` with each endpoint's recorded address replaced by the target's:
// exact HOST:PORT first, then `ports` (the port; the host by hosts(), else
// kept as written). Endpoints that
// map to nothing are left as they are, so they differ from the target's.
std::string map_endpoints(std::string_view value, const EndpointMap& map, const std::map<uint16_t, uint16_t>& ports);
// Whether a recorded endpoint list stands for the live one: the same number
// of endpoints in the same order, each with the same prefix (listener name,
// protocol or node id) and the mapped port, and a host that is either the
// mapped one or the one the recorded value wrote (how a broker writes its
// own host in a config need not be how kwire was told to reach it).
bool endpoints_match(std::string_view recorded, std::string_view live, const EndpointMap& map,
                     const std::map<uint16_t, uint16_t>& ports);
// The Kafka protocol reaches only the listeners the capture's clients used:
// the ports of the others (the controller's, a PLAINTEXT listener next to the
// SSL one the clients used) are not in the EndpointMap. With the recorded and
// the live answer of one broker's DescribeConfigs: each listener of the
// recorded `listeners` whose port `ports` does not map yet maps it to the
// port the live `listeners` gives the same name, unless that live port
// already stands for another recorded one (a target listener is the image of
// one recorded address only). A listener the target lacks, or has renamed,
// maps to nothing. `recorded_configs`/`live_configs`: config name -> value of
// one resource. Adds to `ports`.
void listener_ports(const std::map<std::string, std::string>& recorded_configs,
                    const std::map<std::string, std::string>& live_configs, std::map<uint16_t, uint16_t>& ports);
// Node endpoints of a Metadata or DescribeCluster answer: the recorded
// broker with node id N maps to the live broker with node id N.
void learn_node_endpoints(const ProgramSet& ps, const Frame& recorded, const Frame& live, EndpointMap& out);

// Heartbeat responses leave an assignment null when it did not change, and
// which heartbeat first carries a new one is timing. Fields listed here are
// compared by their effective value: the last one sent to that member (a
// field that is never null, such as topologyDescriptionRequired, by its value),
// and a value the capture shows one heartbeat earlier or later is timing.
struct StickyField {
  std::string_view api;    // "StreamsGroupHeartbeat"
  std::string_view path;   // "body.activeTasks"
};
const std::vector<StickyField>& sticky_fields();
// Booleans by which the target asks a member for something on its own timer
// (topologyDescriptionRequired: the broker asks again for a topology
// description once the back-off after a failed one is over, and that back-off
// has 20% jitter). Compared per member as a sequence of asks, whatever
// heartbeat carries them: an ask on one side matches one the other side made
// earlier, or one the capture shows later in the member's session; a target's
// ask the capture never makes is a regression.
const std::vector<StickyField>& ask_fields();
// Status codes that only say a timer has not fired yet (ASSIGNMENT_DELAYED):
// elements with them are left out of the comparison of `path`.
struct TimerStatus {
  std::string_view api, path, code_field;
  int64_t code;
};
const std::vector<TimerStatus>& timer_statuses();
// A StreamsGroupHeartbeat answer whose status says ASSIGNMENT_DELAYED (the
// target's assignment waits for a timer) where the recorded answer has no such
// status: the client would heartbeat again, and the replay does (a retry).
// Likewise a ShareGroupHeartbeat answered with an empty assignment where the
// recorded answer assigned partitions: the target's share group has not
// assigned this member yet (its assignor runs after the member joined), and
// the member's next heartbeat gets it.
// A ShareGroupHeartbeat answer's assignment: -1 when it has none (null: the
// member's assignment is unchanged), else how many partitions it assigns.
int64_t share_assigned(const ProgramSet& ps, const Frame& f);
bool assignment_delayed_only_live(const ProgramSet& ps, const Frame& recorded, const Frame& live);
// The last effective value of each sticky field, per member connection.
struct StickyMemory {
  std::unordered_map<std::string, std::string> recorded, live;
  // The value the capture shows at the member's next response of the same
  // api: a target that hands an assignment out one heartbeat earlier (or
  // later, matching the previous value) differs in timing only.
  std::unordered_map<std::string, std::string> next;
  // Ask fields: recorded asks minus the target's so far, and the recorded
  // asks not yet compared in the member's session (counted once needed).
  std::unordered_map<std::string, int> ask_balance, asks_left;
};
// Adds the asks of one recorded response of a member to memory.asks_left
// (called for each of the member's responses after the one being compared,
// the first time the target asks alone; until then no ask needs them).
void count_recorded_asks(const ProgramSet& ps, const Frame& recorded, const std::string& member, StickyMemory& memory);
// Whether `live` asks where `recorded` does not.
bool asks_alone(const ProgramSet& ps, const Frame& recorded, const Frame& live);
// Fills memory.next from the member's next recorded response of that api.
void sticky_lookahead(const ProgramSet& ps, const Frame& next_recorded, const std::string& member,
                      StickyMemory& memory);

// Appends the differences between `recorded` and `live` (both decoded as the
// same api and version) to `out`, ignored ones flagged; then the expectations
// that `live` does not meet.
void compare(const ProgramSet& ps, const Frame& recorded, const Frame& live, const CompareOptions& opts,
             std::vector<Difference>& out, StickyMemory* memory = nullptr, const std::string& member = {});
// Only the expectations (when there is nothing recorded to compare with).
void check_expectations(const ProgramSet& ps, const Frame& live, const std::vector<ExpectRule>& expect,
                        std::vector<Difference>& out);

// A node's value as a JSON literal, as `kwire decode -T json` writes it.
std::string json_value(const ProgramSet& ps, const Frame& f, uint32_t node);

}  // namespace kwire::replay
