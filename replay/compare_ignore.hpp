// Ignore rules of the comparison: the fields whose values are the target's
// own and so may differ from the capture's without a regression. Volatile
// fields by pattern (default_ignore_rules, the user's --ignore), wall-clock
// times of the replay's run, and the broker configs that describe the host
// (DescribeConfigs), with the address map by which a recorded listener stands
// for the target's. Includes compare_paths only.
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
// The first rule of `rules` that covers a value differing at `segs` of `api`
// (null: none). Presence-only rules cover no values.
const IgnoreRule* value_rule(const std::vector<IgnoreRule>& rules, std::string_view api,
                             const std::vector<std::string_view>& segs);
// The first presence-only rule for the array at exactly `segs` of `api`,
// whose elements one side lists and the other not (null: none).
const IgnoreRule* presence_rule(const std::vector<IgnoreRule>& rules, std::string_view api,
                                const std::vector<std::string_view>& segs);

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
// Whether the integers `recorded` and `live` at `segs` of `api` are a time of
// the capture and a time of the replay's run [run_from_ms, run_to_ms] (a
// run_to_ms of 0: still running; a run_from_ms of 0: not known, so never).
bool run_time(std::string_view api, const std::vector<std::string_view>& segs, int64_t recorded, int64_t live,
              int64_t run_from_ms, int64_t run_to_ms);

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
// The host config called `name` (null: not one).
const HostConfig* host_config(std::string_view name);

// DescribeConfigs answers as the rules above read them. A string field of a
// config or of a synonym (Name, Value; null: none), the config's name, the
// element of the body's top-level array (a result: one resource) that node n
// lies in, and that result's configs, name -> value.
const Node* config_field(const ProgramSet& ps, const Frame& f, uint32_t config, std::string_view field);
std::string_view config_name(const ProgramSet& ps, const Frame& f, uint32_t config);
uint32_t result_of(const Frame& f, uint32_t n);
std::map<std::string, std::string> resource_configs(const ProgramSet& ps, const Frame& f, uint32_t result);

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

}  // namespace kwire::replay
