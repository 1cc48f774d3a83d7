#include "replay/compare.hpp"

#include <charconv>

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "dissector/output/output.hpp"
#include "dissector/protocol/codes.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

namespace {
bool glob(const std::vector<std::string>& segments, const std::vector<std::string_view>& path);
}

bool PathPattern::matches(std::string_view api_name, const std::vector<std::string_view>& path) const {
  if (!api.empty() && api != api_name) return false;
  // A rule about a field covers everything under it.
  std::vector<std::string_view> prefix;
  for (const auto& seg : path) {
    prefix.push_back(seg);
    if (glob(segments, prefix)) return true;
  }
  return false;
}

bool PathPattern::matches_exactly(std::string_view api_name, const std::vector<std::string_view>& path) const {
  return (api.empty() || api == api_name) && glob(segments, path);
}

namespace {
bool glob(const std::vector<std::string>& segments, const std::vector<std::string_view>& path) {
  // Iterative glob over segments with a single backtrack point per **.
  size_t p = 0, s = 0, star_p = SIZE_MAX, star_s = 0;
  std::string seg;
  while (s < path.size()) {
    if (p < segments.size() && segments[p] == "**") { star_p = p++; star_s = s; continue; }
    if (p < segments.size()) {
      seg.assign(path[s]);
      if (fnmatch(segments[p].c_str(), seg.c_str(), 0) == 0) { ++p; ++s; continue; }
    }
    if (star_p == SIZE_MAX) return false;
    p = star_p + 1;
    s = ++star_s;
  }
  while (p < segments.size() && segments[p] == "**") ++p;
  return p == segments.size();
}
}  // namespace

bool parse_pattern(const std::string& text, PathPattern& out, std::string& error) {
  out = PathPattern{};
  out.text = text;
  std::string path = text;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    out.api = text.substr(0, colon);
    path = text.substr(colon + 1);
  }
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    char c = i < path.size() ? path[i] : '.';
    if (c == '[') {  // indices do not take part in matching
      size_t close = path.find(']', i);
      if (close == std::string::npos) { error = "unclosed [ in path '" + text + "'"; return false; }
      i = close;
      continue;
    }
    if (c == '.') {
      if (cur.empty()) { error = "empty segment in path '" + text + "' at column " + std::to_string(i + 1); return false; }
      out.segments.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (out.segments.empty()) { error = "empty path"; return false; }
  return true;
}

// "body.responses[0].partitions[+1].errorCode" -> "body.responses.partitions.errorCode".
std::string plain_path(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') {
      size_t close = path.find(']', i);
      if (close == std::string::npos) break;
      i = close;
      continue;
    }
    out += path[i];
  }
  return out;
}

// Regressed fields, "Api path" -> how many times.
std::vector<IgnoreRule> default_ignore_rules() {
  std::vector<IgnoreRule> rules = pattern_table<IgnoreRule>({
      {"**.throttleTimeMs", "how long the broker asked the client to wait"},
      {"**.*Timestamp", "wall-clock times"},
      {"**.*TimestampMs", "wall-clock times"},
      {"**.logAppendTimeMs", "wall-clock times"},
      {"**.incarnationId", "broker-generated uuid of a broker start"},
      {"**.nodeId", "node ids of the target"},
      {"**.leaderId", "node ids of the target"},
      {"**.controllerId", "node ids of the target"},
      {"**.brokerId", "node ids of the target"},
      {"**.replicaNodes", "node ids of the target"},
      {"**.isrNodes", "node ids of the target"},
      {"**.offlineReplicas", "node ids of the target"},
      {"**.eligibleLeaderReplicas", "node ids of the target"},
      {"**.lastKnownElr", "node ids of the target"},
      {"**.host", "host names of the target"},
      {"**.port", "ports of the target"},
      {"**.rack", "racks of the target"},
      {"**.brokers", "the target's brokers"},
      {"**.endpoints", "the target's listeners"},
      {"ApiVersions:body.finalizedFeaturesEpoch", "the target's metadata offset"},
      {"**.errorMessage", "free text that names volatile values (ids, times)"},
      {"SaslAuthenticate:body.authBytes", "SASL challenges carry fresh nonces and salts (kwire checks the broker's SCRAM proof itself)"},
      {"Fetch:body.responses.partitions.highWatermark", "depends on what was produced when the fetch ran"},
      {"Fetch:body.responses.partitions.lastStableOffset", "depends on what was produced when the fetch ran"},
      {"Fetch:body.responses.partitions.logStartOffset", "depends on what was produced when the fetch ran"},
      {"Fetch:body.responses.partitions.records", "long-polled: which records arrive in which fetch is timing"},
      {"Fetch:body.responses.partitions.abortedTransactions", "long-polled: follows the records"},
      {"Fetch:body.responses.partitions.currentLeader", "node ids of the target"},
      {"Fetch:body.nodeEndpoints", "the target's listeners"},
      {"**.replicaDirectoryId", "the target's log directories (a uuid made when its storage was formatted)"},
      {"DescribeQuorum:body.topics.partitions.highWatermark", "the target's metadata log"},
      {"DescribeQuorum:body.topics.partitions.leaderEpoch", "the target's quorum elections"},
      {"DescribeQuorum:body.topics.partitions.currentVoters.logEndOffset", "the target's metadata log"},
      {"DescribeQuorum:body.topics.partitions.observers.logEndOffset", "the target's metadata log"},
      {"DescribeQuorum:body.topics.partitions.currentVoters.replicaId", "node ids of the target"},
      {"DescribeQuorum:body.topics.partitions.observers.replicaId", "node ids of the target"},
      {"ShareGroupDescribe:body.groups.groupEpoch",
       "also counts the share partitions' initialization, which the coordinator ends in the background: how many "
       "changes one bump covers is timing"},
      {"ShareGroupDescribe:body.groups.assignmentEpoch", "follows the group epoch"},
      {"ShareGroupDescribe:body.groups.members.assignment",
       "a member is assigned a partition once its share state is initialized, which the coordinator does in the "
       "background"},
  });
  for (auto& r : pattern_table<IgnoreRule>({
           {"Fetch:body.responses", "an incremental fetch lists the topics with news, which is timing"},
           {"Fetch:body.responses.partitions", "an incremental fetch lists the partitions with news, which is timing"},
       })) {
    r.presence_only = true;
    rules.push_back(std::move(r));
  }
  return rules;
}

const std::vector<UnorderedArray>& unordered_arrays() {
  static const std::vector<UnorderedArray> v = pattern_table<UnorderedArray>({
      {"**.partitions", "partition numbers of an assignment or a task"},
      {"**.partitionIndexes", "partition numbers asked about or answered"},
      {"**.subscribedTopicNames", "topic names a member subscribes to"},
      {"**.sourceTopics", "a subtopology's source topics"},
      {"**.repartitionSinkTopics", "a subtopology's repartition topics"},
  });
  return v;
}

const std::vector<HostConfig>& host_configs() {
  static const std::vector<HostConfig> v = {
      {"listeners", true, "the target's listener endpoints"},
      {"advertised.listeners", true, "the target's listener endpoints"},
      {"controller.quorum.bootstrap.servers", true, "the target's controller endpoints"},
      {"controller.quorum.voters", true, "the target's controller endpoints"},
      {"log.dirs", false, "paths on the target's host"},
      {"log.dir", false, "paths on the target's host"},
      {"metadata.log.dir", false, "paths on the target's host"},
      {"ssl.keystore.location", false, "paths on the target's host"},
      {"ssl.truststore.location", false, "paths on the target's host"},
  };
  return v;
}

std::vector<EndpointItem> parse_endpoints(std::string_view value) {
  std::vector<EndpointItem> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    std::string_view item = value.substr(start, end - start);
    start = end + 1;
    EndpointItem e;
    size_t addr = item.find("://");
    if (addr != std::string_view::npos) addr += 3;
    else if (item.find('@') != std::string_view::npos) addr = item.find('@') + 1;
    else addr = 0;
    e.prefix = std::string(item.substr(0, addr));
    std::string_view hp = item.substr(addr);
    const size_t colon = hp.rfind(':');
    const bool bracketed = !hp.empty() && hp.front() == '[';
    if (colon != std::string_view::npos && (!bracketed || hp.rfind(']') < colon)) {
      std::string_view port = hp.substr(colon + 1);
      int p = 0;
      bool digits = !port.empty() && port.size() <= 5;
      for (char ch : port) digits = digits && ch >= '0' && ch <= '9', p = p * 10 + (ch - '0');
      if (digits && p <= 65535) {
        e.port = p;
        hp = hp.substr(0, colon);
      }
    }
    if (hp.size() >= 2 && hp.front() == '[' && hp.back() == ']') hp = hp.substr(1, hp.size() - 2);
    e.host = std::string(hp);
    out.push_back(std::move(e));
  }
  return out;
}

namespace {
std::string endpoint_text(const EndpointItem& e) {
  std::string host = e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host;
  return e.prefix + host + (e.port >= 0 ? ":" + std::to_string(e.port) : "");
}
// "host:port" as HostPort::str() writes it -> host, port.
bool split_address(const std::string& a, std::string& host, int& port) {
  std::vector<EndpointItem> v = parse_endpoints(a);
  if (v.size() != 1 || v[0].port < 0 || !v[0].prefix.empty()) return false;
  host = v[0].host;
  port = v[0].port;
  return true;
}
}  // namespace

std::map<uint16_t, uint16_t> EndpointMap::ports() const {
  std::map<uint16_t, uint16_t> out;
  std::map<uint16_t, int> seen;
  for (const auto& [from, to] : addresses) {
    std::string h1, h2;
    int p1 = -1, p2 = -1;
    if (!split_address(from, h1, p1) || !split_address(to, h2, p2)) continue;
    const auto rp = static_cast<uint16_t>(p1);
    if (seen[rp]++ && out.count(rp) && out[rp] != p2) { out.erase(rp); continue; }  // two brokers on one port: ambiguous
    if (seen[rp] == 1) out[rp] = static_cast<uint16_t>(p2);
  }
  return out;
}

std::map<std::string, std::string> EndpointMap::hosts() const {
  std::map<std::string, std::string> out;
  std::set<std::string> ambiguous;
  for (const auto& [from, to] : addresses) {
    std::string h1, h2;
    int p1 = -1, p2 = -1;
    if (!split_address(from, h1, p1) || !split_address(to, h2, p2) || ambiguous.count(h1)) continue;
    auto [it, added] = out.emplace(h1, h2);
    if (!added && it->second != h2) {
      out.erase(it);
      ambiguous.insert(h1);
    }
  }
  return out;
}

namespace {
void map_item(EndpointItem& e, const EndpointMap& map, const std::map<uint16_t, uint16_t>& ports) {
  if (e.port < 0) return;
  auto exact = map.addresses.find(endpoint_text(EndpointItem{"", e.host, e.port}));
  std::string h;
  int p = -1;
  if (exact != map.addresses.end() && split_address(exact->second, h, p)) {
    e.host = h;
    e.port = p;
  } else if (auto it = ports.find(static_cast<uint16_t>(e.port)); it != ports.end()) {
    e.port = it->second;
    const auto hosts = map.hosts();
    if (auto h = hosts.find(e.host); h != hosts.end()) e.host = h->second;
  }
}
}  // namespace

std::string map_endpoints(std::string_view value, const EndpointMap& map, const std::map<uint16_t, uint16_t>& ports) {
  std::string out;
  bool first = true;
  for (EndpointItem e : parse_endpoints(value)) {
    map_item(e, map, ports);
    out += (first ? "" : ",") + endpoint_text(e);
    first = false;
  }
  return out;
}

bool endpoints_match(std::string_view recorded, std::string_view live, const EndpointMap& map,
                     const std::map<uint16_t, uint16_t>& ports) {
  const auto r = parse_endpoints(recorded), l = parse_endpoints(live);
  if (r.size() != l.size()) return false;
  for (size_t i = 0; i < r.size(); ++i) {
    EndpointItem m = r[i];
    map_item(m, map, ports);
    if (m.prefix != l[i].prefix || m.port != l[i].port) return false;
    if (l[i].host != m.host && l[i].host != r[i].host) return false;
  }
  return true;
}

void listener_ports(const std::map<std::string, std::string>& recorded_configs,
                    const std::map<std::string, std::string>& live_configs, std::map<uint16_t, uint16_t>& ports) {
  auto listeners = [](const std::map<std::string, std::string>& configs) {
    std::map<std::string, int> by_name;   // "CONTROLLER" -> port
    auto it = configs.find("listeners");
    if (it == configs.end()) return by_name;
    for (const auto& e : parse_endpoints(it->second))
      if (e.prefix.size() > 3 && e.prefix.ends_with("://") && e.port >= 0) by_name[e.prefix.substr(0, e.prefix.size() - 3)] = e.port;
    return by_name;
  };
  const auto rec = listeners(recorded_configs), live = listeners(live_configs);
  std::set<uint16_t> taken;   // live ports that already stand for a recorded address
  for (const auto& [from, to] : ports) taken.insert(to);
  for (const auto& [name, port] : rec) {
    auto l = live.find(name);
    const auto rp = static_cast<uint16_t>(port), lp = static_cast<uint16_t>(l == live.end() ? 0 : l->second);
    if (l == live.end() || ports.count(rp) || taken.count(lp)) continue;
    ports[rp] = lp;
    taken.insert(lp);
  }
}

void learn_node_endpoints(const ProgramSet& ps, const Frame& recorded, const Frame& live, EndpointMap& out) {
  // Node id -> "host:port" of the brokers an answer lists.
  auto brokers = [&](const Frame& f) {
    std::map<int64_t, std::string> by_id;
    if (!f.body) return by_id;
    for (uint32_t c : Children(f, f.body)) {
      if (f.nodes[c].desc == kDescUnknownTag || ps.field(f.nodes[c].desc).json_name != "brokers" ||
          f.nodes[c].type != WireType::Array)
        continue;
      for (uint32_t el : Children(f, c)) {
        const Node* id = find_field(f, ps, el, "NodeId");
        if (!id) id = find_field(f, ps, el, "BrokerId");
        const Node* host = find_field(f, ps, el, "Host");
        const Node* port = find_field(f, ps, el, "Port");
        if (!id || !host || !port || host->is_null()) continue;
        by_id[id->v.i] = endpoint_text(EndpointItem{"", std::string(host->str()), static_cast<int>(port->v.i)});
      }
    }
    return by_id;
  };
  const auto rec = brokers(recorded), now = brokers(live);
  for (const auto& [id, addr] : rec)
    if (auto it = now.find(id); it != now.end()) out.add(addr, it->second);
}

const std::vector<StickyField>& sticky_fields() {
  static const std::vector<StickyField> v = {
      {"StreamsGroupHeartbeat", "body.activeTasks"},
      {"StreamsGroupHeartbeat", "body.standbyTasks"},
      {"StreamsGroupHeartbeat", "body.warmupTasks"},
      {"StreamsGroupHeartbeat", "body.partitionsByUserEndpoint"},
      {"ConsumerGroupHeartbeat", "body.assignment"},
      {"ShareGroupHeartbeat", "body.assignment"},
  };
  return v;
}

const std::vector<StickyField>& ask_fields() {
  static const std::vector<StickyField> v = {
      {"StreamsGroupHeartbeat", "body.topologyDescriptionRequired"},
  };
  return v;
}

const std::vector<WallClockField>& wall_clock_fields() {
  static const std::vector<WallClockField> v = pattern_table<WallClockField>({
      {"DescribeTransactions:body.transactionStates.transactionStartTimeMs",
       "when the coordinator saw the transaction's first partition"},
  });
  return v;
}

const std::vector<TimerStatus>& timer_statuses() {
  static const std::vector<TimerStatus> v = {
      {"StreamsGroupHeartbeat", "body.status", "statusCode", 5},  // ASSIGNMENT_DELAYED
      // MISSING_INTERNAL_TOPICS: the broker creates them in the background; which
      // heartbeat still sees them missing is timing.
      {"StreamsGroupHeartbeat", "body.status", "statusCode", 3},
  };
  return v;
}

namespace {
bool has_status_code(const ProgramSet& ps, const Frame& f, int64_t code) {
  if (!f.program || !f.body || f.program->api_name != "StreamsGroupHeartbeat") return false;
  for (uint32_t c : Children(f, f.body)) {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag || n.is_null() || n.type != WireType::Array || ps.field(n.desc).json_name != "status")
      continue;
    for (uint32_t el : Children(f, c)) {
      if (f.nodes[el].type != WireType::Struct) continue;
      for (uint32_t k : Children(f, el))
        if (f.nodes[k].desc != kDescUnknownTag && ps.field(f.nodes[k].desc).json_name == "statusCode" && f.nodes[k].v.i == code)
          return true;
    }
  }
  return false;
}
}  // namespace

int64_t share_assigned(const ProgramSet& ps, const Frame& f) {
  if (!f.ok() || !f.program || !f.body || f.program->api_name != "ShareGroupHeartbeat") return -1;
  const Node* a = find_field(f, ps, f.body, "Assignment");
  if (!a || a->is_null()) return -1;
  const Node* tps = find_field(f, ps, static_cast<uint32_t>(a - f.nodes.data()), "TopicPartitions");
  if (!tps || tps->is_null()) return -1;
  int64_t n = 0;
  const auto at = static_cast<uint32_t>(tps - f.nodes.data());
  for (uint32_t t : Children(f, at))
    for (uint32_t c : Children(f, t))
      if (f.nodes[c].type == WireType::Array && !f.nodes[c].is_null()) n += f.nodes[c].aux;
  return n;
}

bool assignment_delayed_only_live(const ProgramSet& ps, const Frame& recorded, const Frame& live) {
  if (share_assigned(ps, live) == 0 && share_assigned(ps, recorded) > 0) return true;
  constexpr int64_t kAssignmentDelayed = 5;
  return has_status_code(ps, live, kAssignmentDelayed) && recorded.program && recorded.body &&
         !has_status_code(ps, recorded, kAssignmentDelayed);
}

namespace {
bool unordered_values(std::string_view api, const std::vector<std::string_view>& segs) {
  for (const auto& u : unordered_arrays())
    if (u.pattern.matches_exactly(api, segs)) return true;
  return false;
}

// The subtree as JSON. Canonical: the elements of struct arrays and of the
// unordered value arrays sorted, so that two subtrees equal but for the order
// of their sets give the same text.
void subtree_json(const ProgramSet& ps, const Frame& f, uint32_t i, std::string& out, std::string_view api = {},
                  std::vector<std::string_view>* segs = nullptr) {
  const Node& n = f.nodes[i];
  if (n.is_null() || (n.type != WireType::Struct && n.type != WireType::Array && n.type != WireType::Records)) {
    out += json_value(ps, f, i);
    return;
  }
  const bool obj = n.type == WireType::Struct;
  std::vector<std::string> parts;
  for (uint32_t c : Children(f, i)) {
    std::string part;
    if (obj) part = '"' + std::string(ps.field(f.nodes[c].desc).json_name) + "\":";
    if (segs && obj) segs->push_back(f.nodes[c].desc == kDescUnknownTag ? std::string_view("_tag")
                                                                         : ps.field(f.nodes[c].desc).json_name);
    subtree_json(ps, f, c, part, api, segs);
    if (segs && obj) segs->pop_back();
    parts.push_back(std::move(part));
  }
  if (segs && n.type == WireType::Array && !parts.empty() &&
      (f.nodes[i + 1].type == WireType::Struct || unordered_values(api, *segs)))
    std::sort(parts.begin(), parts.end());
  out += obj ? '{' : '[';
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) out += ',';
    out += parts[k];
  }
  out += obj ? '}' : ']';
}

// Canonical JSON of a top-level field of the body.
std::string canonical_json(const ProgramSet& ps, const Frame& f, uint32_t i, std::string_view api) {
  std::vector<std::string_view> segs{"body", ps.field(f.nodes[i].desc).json_name};
  std::string out;
  subtree_json(ps, f, i, out, api, &segs);
  return out;
}
}  // namespace

namespace {
// The key of a member's sticky or ask field in StickyMemory.
std::string member_key(std::string_view member, std::string_view api, std::string_view path) {
  std::string key(member);
  key += '\x1f';
  key += api;
  key += '\x1f';
  key += path;
  return key;
}

// Whether `list` names the field `path` ("body.x") of `api`.
bool listed(const std::vector<StickyField>& list, std::string_view api, std::string_view path) {
  for (const auto& s : list)
    if (s.api == api && s.path == path) return true;
  return false;
}
}  // namespace

void sticky_lookahead(const ProgramSet& ps, const Frame& next, const std::string& member, StickyMemory& memory) {
  if (!next.program || !next.body) return;
  for (const auto& s : sticky_fields()) {
    if (s.api != next.program->api_name) continue;
    std::string_view name = s.path.substr(5);  // after "body."
    for (uint32_t c : Children(next, next.body)) {
      if (next.nodes[c].desc == kDescUnknownTag || ps.field(next.nodes[c].desc).json_name != name) continue;
      const std::string key = member_key(member, s.api, s.path);
      if (next.nodes[c].is_null()) memory.next.erase(key);
      else memory.next[key] = canonical_json(ps, next, c, s.api);
    }
  }
}

namespace {
// Whether the response sets the ask field `s` (at the top of its body).
bool asks(const ProgramSet& ps, const Frame& f, const StickyField& s) {
  if (!f.program || !f.body || s.api != f.program->api_name) return false;
  for (uint32_t c : Children(f, f.body)) {
    const Node& n = f.nodes[c];
    if (n.desc != kDescUnknownTag && n.type == WireType::Bool && ps.field(n.desc).json_name == s.path.substr(5))
      return n.v.i != 0;
  }
  return false;
}
}  // namespace

void count_recorded_asks(const ProgramSet& ps, const Frame& recorded, const std::string& member, StickyMemory& memory) {
  for (const auto& s : ask_fields())
    if (asks(ps, recorded, s)) ++memory.asks_left[member_key(member, s.api, s.path)];
}

bool asks_alone(const ProgramSet& ps, const Frame& recorded, const Frame& live) {
  for (const auto& s : ask_fields())
    if (asks(ps, live, s) && !asks(ps, recorded, s)) return true;
  return false;
}

std::string json_value(const ProgramSet& ps, const Frame& f, uint32_t i) {
  const Node& n = f.nodes[i];
  if (n.is_null()) return "null";
  const FieldDesc& d = ps.field(n.desc);
  if (d.flags & kSensitive) return "\"<redacted>\"";
  switch (n.type) {
    case WireType::Bool: return n.v.i ? "true" : "false";
    case WireType::Float64: {
      if (std::isnan(n.v.f)) return "\"NaN\"";
      char b[32];
      snprintf(b, sizeof b, "%.17g", n.v.f);
      return b;
    }
    case WireType::Uuid: return '"' + wire::uuid_to_string(n.v.p) + '"';
    case WireType::String: case WireType::VarString: {
      TextBuffer t;
      json_string(t, n.str());
      return t.str();
    }
    case WireType::Bytes: case WireType::VarBytes: return '"' + wire::base64(n.bytes()) + '"';
    case WireType::Struct: return "\"(present)\"";  // a nullable struct next to a null one
    case WireType::Array: case WireType::Records: {
      uint32_t count = 0;
      for (uint32_t c : Children(f, i)) { (void)c; ++count; }
      return '"' + std::to_string(count) + (count == 1 ? " element\"" : " elements\"");
    }
    default: return std::to_string(n.v.i);
  }
}

namespace {

class Walker {
 public:
  Walker(const ProgramSet& ps, const Frame& rec, const Frame& live, const CompareOptions& opts,
         std::vector<Difference>& out, StickyMemory* memory, const std::string& member)
      : ps_(ps), rec_(rec), live_(live), opts_(opts), out_(out), memory_(memory), member_(member),
        api_(live.program ? live.program->api_name : std::string_view()) {}

  void structure(uint32_t r, uint32_t l) {
    // Fields by descriptor (unknown tagged fields by tag): tagged fields may be
    // present on one side only.
    std::vector<uint32_t> lc;
    for (uint32_t c : Children(live_, l)) lc.push_back(c);
    std::vector<bool> used(lc.size(), false);
    for (uint32_t c : Children(rec_, r)) {
      const Node& rn = rec_.nodes[c];
      size_t k = 0;
      for (; k < lc.size(); ++k) {
        const Node& ln = live_.nodes[lc[k]];
        if (!used[k] && ln.desc == rn.desc && (rn.desc != kDescUnknownTag || ln.tag == rn.tag)) break;
      }
      if (k < lc.size() && same_subtree(rec_, c, live_, lc[k]) && !sticky_field(c)) { used[k] = true; continue; }
      Push p(*this, name_of(rec_, c));
      if (k == lc.size()) { diff(json_value(ps_, rec_, c), "\"(absent)\""); continue; }
      used[k] = true;
      node(c, lc[k]);
    }
    for (size_t k = 0; k < lc.size(); ++k)
      if (!used[k]) {
        Push p(*this, name_of(live_, lc[k]));
        diff("\"(absent)\"", json_value(ps_, live_, lc[k]));
      }
  }

  // A field compared by effective value must be visited even when equal: it updates the memory.
  bool sticky_field(uint32_t c) const {
    if (!memory_ || rec_.nodes[c].parent != rec_.body) return false;
    const std::string path = "body." + std::string(ps_.field(rec_.nodes[c].desc).json_name);
    return listed(sticky_fields(), api_, path) || listed(ask_fields(), api_, path);
  }

  bool sticky() const { return memory_ && listed(sticky_fields(), api_, path_); }
  bool ask() const { return memory_ && listed(ask_fields(), api_, path_); }

  // An ask field: asks on both sides are matched in order, not by heartbeat.
  void ask_node(const Node& rn, const Node& ln) {
    const std::string key = member_key(member_, api_, path_);
    const bool a = rn.type == WireType::Bool && rn.v.i, b = ln.type == WireType::Bool && ln.v.i;
    int& balance = memory_->ask_balance[key];  // recorded asks minus the target's
    int& left = memory_->asks_left[key];       // recorded asks from this answer on
    const int before = balance;
    if (a && left > 0) --left;
    balance += int(a) - int(b);
    if (a == b) return;
    const char* ra = a ? "true" : "false";
    const char* rb = b ? "true" : "false";
    if (a) {
      out_.push_back({path_, ra, rb,
                      before < 0 ? "the target asked at an earlier heartbeat (timing)"
                                 : "the target has not asked yet; its back-off has jitter (timing)",
                      true});
      return;
    }
    // The target's earlier asks not yet matched (-before) claim as many of the
    // capture's later ones.
    if (before > 0 || left > -before) {
      out_.push_back({path_, ra, rb,
                      before > 0 ? "the capture asked at an earlier heartbeat (timing)"
                                 : "the capture asks at a later heartbeat (timing)",
                      true});
      return;
    }
    diff(ra, rb);
  }

  void node(uint32_t r, uint32_t l) {
    const Node& rn = rec_.nodes[r];
    const Node& ln = live_.nodes[l];
    if (ask()) {
      ask_node(rn, ln);
      return;
    }
    if (sticky()) {
      // Compared by effective value: null keeps the member's last one.
      const std::string key = member_key(member_, api_, path_);
      std::string a, b;
      const std::string previous = memory_->recorded[key];
      if (!rn.is_null()) { a = canonical_json(ps_, rec_, r, api_); memory_->recorded[key] = a; } else a = memory_->recorded[key];
      if (!ln.is_null()) { b = canonical_json(ps_, live_, l, api_); memory_->live[key] = b; } else b = memory_->live[key];
      if (a == b) return;
      auto next = memory_->next.find(key);
      if ((next != memory_->next.end() && next->second == b) || (!previous.empty() && previous == b)) {
        out_.push_back({path_, json_text(a), json_text(b), "one heartbeat earlier or later (timing)", true});
        return;
      }
      if (live_timer_pending()) {
        // The target says its assignment waits for a timer (ASSIGNMENT_DELAYED):
        // heartbeats sent faster than recorded (--timing fast) come before it
        // fires, however many of them there are. Which heartbeat gets the
        // assignment is timing.
        out_.push_back({path_, json_text(a), json_text(b), "the target's assignment waits for a timer (timing)", true});
        return;
      }
      diff(json_text(a), json_text(b));
      return;
    }
    if (rn.is_null() || ln.is_null() || rn.type != ln.type) {
      if (rn.is_null() != ln.is_null() || rn.type != ln.type) diff(json_value(ps_, rec_, r), json_value(ps_, live_, l));
      return;
    }
    switch (rn.type) {
      case WireType::Struct: structure(r, l); return;
      case WireType::Array: case WireType::Records: array(r, l); return;
      default: {
        if (leader_check(r, l)) return;
        if (same_leaf(rec_, r, live_, l)) return;
        std::string a = json_value(ps_, rec_, r), b = json_value(ps_, live_, l);
        if (a == b) return;
        if (host_config_value(r, l, a, b)) return;
        if (replica_config_value(r, l, a, b)) return;
        if (config_source(r, l, a, b)) return;
        if (wall_clock(r, l, a, b)) return;
        if (segs_.back() == "replicationFactor" && is_integer(rn.type) && shape_count(rn.v.i, ln.v.i)) {
          shape(a, b, replicas_why());
          return;
        }
        diff(a, b);
        if (rn.desc != kDescUnknownTag && is_error_code_field(ps_.field(rn.desc))) {
          out_.back().recorded_name = std::string(error_name(rn.v.i));
          out_.back().replayed_name = std::string(error_name(ln.v.i));
        }
      }
    }
  }

  // A wall_clock_fields() value: a live time within the replay's run where the
  // capture has a time (an ignored difference, true); anything else is
  // compared as a value (false).
  bool wall_clock(uint32_t r, uint32_t l, const std::string& a, const std::string& b) {
    constexpr int64_t kSlackMs = 1000;
    const Node& rn = rec_.nodes[r];
    const Node& ln = live_.nodes[l];
    if (!is_integer(rn.type) || opts_.run_from_ms <= 0 || rn.v.i < 0 || ln.v.i < 0) return false;
    std::vector<std::string_view> segs(segs_.begin(), segs_.end());
    bool listed = false;
    for (const auto& w : wall_clock_fields()) listed = listed || w.pattern.matches_exactly(api_, segs);
    if (!listed) return false;
    const int64_t to = opts_.run_to_ms > 0 ? opts_.run_to_ms : INT64_MAX - kSlackMs;
    if (ln.v.i < opts_.run_from_ms - kSlackMs || ln.v.i > to + kSlackMs) return false;
    out_.push_back({path_, a, b, std::string(kWallClockRule), true});
    return true;
  }

  // A DescribeConfigs value of one of host_configs(): handled here (true) or
  // compared as any value (false).
  bool host_config_value(uint32_t r, uint32_t l, const std::string& a, const std::string& b) {
    if (api_ != "DescribeConfigs" || path_.size() < 6 || path_.compare(path_.size() - 6, 6, ".value") != 0) return false;
    const Node& rn = rec_.nodes[r];
    if (rn.type != WireType::String || rn.is_null() || live_.nodes[l].is_null()) return false;
    std::string_view name = config_name(rec_, rn.parent);
    for (const auto& h : host_configs()) {
      if (h.name != name) continue;
      if (h.endpoints) {
        // The resource (a broker) both values belong to: that of a config, or
        // of one of its synonyms.
        const uint32_t rres = result_of(rec_, r), lres = result_of(live_, l);
        std::map<uint16_t, uint16_t> ports = opts_.endpoints ? opts_.endpoints->ports() : std::map<uint16_t, uint16_t>{};
        listener_ports(resource_configs(rec_, rres), resource_configs(live_, lres), ports);
        static const EndpointMap none;
        if (!endpoints_match(rn.str(), live_.nodes[l].str(), opts_.endpoints ? *opts_.endpoints : none, ports)) {
          // The controller quorum of a cluster of another size lists another
          // number of controllers.
          const size_t rc = parse_endpoints(rn.str()).size(), lc = parse_endpoints(live_.nodes[l].str()).size();
          if (name.starts_with("controller.quorum.") && rc != lc && opts_.recorded_brokers > 0 && opts_.target_brokers > 0 &&
              opts_.recorded_brokers != opts_.target_brokers) {
            shape(a, b, std::string(kShapeRule) + std::string(name) + " lists " + std::to_string(lc) +
                            (lc == 1 ? " controller" : " controllers") + ", the capture's " + std::to_string(rc));
            return true;
          }
          return false;  // compared as any value: a regression
        }
        out_.push_back({path_, a, b, "DescribeConfigs " + std::string(h.name) + ": " + std::string(h.why) +
                                         " (recorded broker addresses mapped to the target's)", true});
        return true;
      }
      out_.push_back({path_, a, b, "DescribeConfigs " + std::string(h.name) + ": " + std::string(h.why), true});
      return true;
    }
    return false;
  }

  // A DescribeConfigs value that counts replicas (a replication factor, a
  // minimum in sync) and follows from the clusters' sizes: a shape difference
  // (true).
  bool replica_config_value(uint32_t r, uint32_t l, const std::string& a, const std::string& b) {
    if (api_ != "DescribeConfigs" || segs_.back() != "value") return false;
    const Node& rn = rec_.nodes[r];
    const Node& ln = live_.nodes[l];
    if (rn.type != WireType::String || rn.is_null() || ln.is_null()) return false;
    const std::string_view name = config_name(rec_, rn.parent);
    int64_t rv = 0, lv = 0;
    if (!replica_config(name) || !parse_count(rn.str(), rv) || !parse_count(ln.str(), lv) || !shape_cap(rv, lv)) return false;
    shape(a, b, replica_config_why(name));
    return true;
  }

  // A DescribeConfigs config source that differs where the value is the same
  // (a default written out in one broker's properties, left out in the
  // other's): ignored (true).
  bool config_source(uint32_t r, uint32_t l, const std::string& a, const std::string& b) {
    if (api_ != "DescribeConfigs" || segs_.back() != "configSource") return false;
    const Node* rv = config_field(rec_, rec_.nodes[r].parent, "Value");
    const Node* lv = config_field(live_, live_.nodes[l].parent, "Value");
    if (!rv || !lv || rv->is_null() || lv->is_null()) return false;
    return value_source(config_name(rec_, rec_.nodes[r].parent), *rv, *lv, a, b);
  }
  // A difference in where config `name`'s value comes from (its source, a
  // synonym): ignored where the values rv and lv are the same, a shape
  // difference where they are replica counts that differ with the shape (true);
  // else a difference of its own (false).
  bool value_source(std::string_view name, const Node& rv, const Node& lv, const std::string& a, const std::string& b) {
    if (rv.str() == lv.str()) {
      out_.push_back({path_, a, b, "DescribeConfigs " + std::string(name) +
                                       ": the same value from another source (a default written out, or left out)", true});
      return true;
    }
    int64_t rc = 0, lc = 0;
    if (!replica_config(name) || !parse_count(rv.str(), rc) || !parse_count(lv.str(), lc) || !shape_cap(rc, lc)) return false;
    shape(a, b, replica_config_why(name));
    return true;
  }
  // A DescribeConfigs synonym (element `el` of frame `f`, under the synonyms
  // arrays r and l) that one side lists and the other not: a source that holds
  // its config's own value, where the config has the same value on both sides
  // (ignored) or values that differ with the shape (a shape difference). True
  // when handled.
  bool config_synonym(uint32_t r, uint32_t l, const Frame& f, uint32_t el, const std::string& a, const std::string& b) {
    if (api_ != "DescribeConfigs" || segs_.back() != "synonyms" || f.nodes[el].type != WireType::Struct) return false;
    const Node* rv = config_field(rec_, rec_.nodes[r].parent, "Value");
    const Node* lv = config_field(live_, live_.nodes[l].parent, "Value");
    const Node* sv = config_field(f, el, "Value");
    const Node* own = &f == &rec_ ? rv : lv;
    if (!rv || !lv || !sv || rv->is_null() || lv->is_null() || sv->is_null() || sv->str() != own->str()) return false;
    return value_source(config_name(rec_, rec_.nodes[r].parent), *rv, *lv, a, b);
  }
  static bool replica_config(std::string_view name) {
    return name.ends_with(".replication.factor") || name.ends_with(".min.isr") || name == "min.insync.replicas";
  }
  static bool parse_count(std::string_view s, int64_t& v) {
    return std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc{};
  }
  std::string replica_config_why(std::string_view name) const {
    return std::string(kShapeRule) + std::string(name) + " counts replicas, of which the target holds at most " +
           std::to_string(opts_.target_brokers);
  }

  // The element of the body's top-level array (a DescribeConfigs result) that node n lies in.
  static uint32_t result_of(const Frame& f, uint32_t n) {
    while (n && n != f.body && f.nodes[n].parent && f.nodes[f.nodes[n].parent].parent != f.body) n = f.nodes[n].parent;
    return n;
  }

  std::string_view config_name(const Frame& f, uint32_t config) const {
    const Node* n = config_field(f, config, "Name");
    return n && !n->is_null() ? n->str() : std::string_view();
  }
  // A string field of a config (or of a synonym): Name, Value.
  const Node* config_field(const Frame& f, uint32_t config, std::string_view field) const {
    if (f.nodes[config].type != WireType::Struct) return nullptr;
    for (uint32_t c : Children(f, config))
      if (f.nodes[c].desc != kDescUnknownTag && ps_.field(f.nodes[c].desc).name == field && f.nodes[c].type == WireType::String)
        return &f.nodes[c];
    return nullptr;
  }
  // Config name -> value of one DescribeConfigs result.
  std::map<std::string, std::string> resource_configs(const Frame& f, uint32_t result) const {
    std::map<std::string, std::string> out;
    if (f.nodes[result].type != WireType::Struct) return out;
    for (uint32_t c : Children(f, result)) {
      if (f.nodes[c].type != WireType::Array) continue;
      for (uint32_t el : Children(f, c)) {
        if (f.nodes[el].type != WireType::Struct) continue;
        const Node* value = config_field(f, el, "Value");
        if (value && !value->is_null()) out.emplace(std::string(config_name(f, el)), std::string(value->str()));
      }
    }
    return out;
  }
  // The live response has a status of timer_statuses() that delays the
  // assignment (ASSIGNMENT_DELAYED, not MISSING_INTERNAL_TOPICS) at top level.
  bool live_timer_pending() const {
    if (!live_.body) return false;
    for (uint32_t c : Children(live_, live_.body)) {
      const Node& n = live_.nodes[c];
      if (n.desc == kDescUnknownTag || n.is_null() || n.type != WireType::Array) continue;
      const std::string field = "body." + std::string(ps_.field(n.desc).json_name);
      for (const auto& t : timer_statuses()) {
        if (t.api != api_ || t.path != field || t.code != kAssignmentDelayed) continue;
        for (uint32_t el : Children(live_, c)) {
          if (live_.nodes[el].type != WireType::Struct) continue;
          for (uint32_t f : Children(live_, el))
            if (live_.nodes[f].desc != kDescUnknownTag && ps_.field(live_.nodes[f].desc).json_name == t.code_field &&
                live_.nodes[f].v.i == t.code)
              return true;
        }
      }
    }
    return false;
  }
  static constexpr int64_t kAssignmentDelayed = 5;  // StreamsGroupHeartbeat status code

  bool timer_element(const Frame& f, uint32_t el) const {
    for (const auto& t : timer_statuses()) {
      if (t.api != api_ || t.path != path_ || f.nodes[el].type != WireType::Struct) continue;
      for (uint32_t c : Children(f, el))
        if (ps_.field(f.nodes[c].desc).json_name == t.code_field && f.nodes[c].v.i == t.code) return true;
    }
    return false;
  }

  void array(uint32_t r, uint32_t l) {
    std::vector<uint32_t> re, le;
    for (uint32_t c : Children(rec_, r)) if (!timer_element(rec_, c)) re.push_back(c);
    for (uint32_t c : Children(live_, l)) if (!timer_element(live_, c)) le.push_back(c);
    const bool structs = (!re.empty() && rec_.nodes[re[0]].type == WireType::Struct) ||
                         (!le.empty() && live_.nodes[le[0]].type == WireType::Struct);
    // Node ids are the target's, but how many replicas a partition has is not:
    // compared as a count (or a shape difference).
    if (!structs && re.size() != le.size() && (segs_.back() == "replicaNodes" || segs_.back() == "isrNodes")) {
      std::vector<std::string> a, b;
      for (uint32_t c : re) a.push_back(json_value(ps_, rec_, c));
      for (uint32_t c : le) b.push_back(json_value(ps_, live_, c));
      if (shape_count(static_cast<int64_t>(re.size()), static_cast<int64_t>(le.size()))) shape(json_list(a), json_list(b), replicas_why());
      else out_.push_back({path_, json_list(a), json_list(b), std::to_string(re.size()) + " replicas recorded, " + std::to_string(le.size()) + " replayed", false});
      return;
    }
    if (structs && segs_.back() == "brokers" && re.size() != le.size() && opts_.recorded_brokers > 0 &&
        opts_.target_brokers > 0 && re.size() == static_cast<size_t>(opts_.recorded_brokers) &&
        le.size() == static_cast<size_t>(opts_.target_brokers)) {
      auto brokers = [](size_t n) { return '"' + std::to_string(n) + (n == 1 ? " broker\"" : " brokers\""); };
      shape(brokers(re.size()), brokers(le.size()), brokers_why());
      return;
    }
    if (!structs && unordered_values(api_, std::vector<std::string_view>(segs_.begin(), segs_.end()))) {
      // A set: the same values in any order are equal; else the sorted lists differ.
      std::vector<std::string> a, b;
      for (uint32_t c : re) a.push_back(json_value(ps_, rec_, c));
      for (uint32_t c : le) b.push_back(json_value(ps_, live_, c));
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) diff(json_list(a), json_list(b));
      return;
    }
    if (!structs) {
      if (re.size() != le.size()) diff('"' + std::to_string(re.size()) + " elements\"", '"' + std::to_string(le.size()) + " elements\"");
      for (size_t i = 0; i < std::min(re.size(), le.size()); ++i) {
        Push p(*this, "[" + std::to_string(i) + "]", true);
        node(re[i], le[i]);
      }
      return;
    }
    // Equal element by element (the common case): nothing to pair.
    if (re.size() == le.size()) {
      bool all = true;
      for (size_t i = 0; i < re.size() && all; ++i) all = same_subtree(rec_, re[i], live_, le[i]);
      if (all) return;
    }
    // Structs: the order of a response array carries no meaning (brokers fill
    // them from hash maps). Equal elements pair first, then the rest by their
    // identity (the spec's map key, else topic / partition / group / member),
    // then by position.
    std::vector<std::string> rj(re.size()), lj(le.size());
    for (size_t i = 0; i < re.size(); ++i) subtree_json(ps_, rec_, re[i], rj[i]);
    for (size_t i = 0; i < le.size(); ++i) subtree_json(ps_, live_, le[i], lj[i]);
    std::vector<int64_t> pair(re.size(), -1);
    std::vector<bool> taken(le.size(), false);
    std::multimap<std::string, size_t> exact;
    for (size_t i = 0; i < le.size(); ++i) exact.emplace(lj[i], i);
    for (size_t i = 0; i < re.size(); ++i) {
      auto it = exact.find(rj[i]);
      if (it == exact.end()) continue;
      pair[i] = static_cast<int64_t>(it->second);
      taken[it->second] = true;
      exact.erase(it);
    }
    std::multimap<std::string, size_t> by_id;
    for (size_t i = 0; i < le.size(); ++i) if (!taken[i]) by_id.emplace(identity(live_, le[i]), i);
    for (size_t i = 0; i < re.size(); ++i) {
      if (pair[i] >= 0) continue;
      auto it = by_id.find(identity(rec_, re[i]));
      if (it == by_id.end() || it->first.empty()) continue;
      pair[i] = static_cast<int64_t>(it->second);
      taken[it->second] = true;
      by_id.erase(it);
    }
    std::vector<size_t> rest;
    for (size_t i = 0; i < le.size(); ++i) if (!taken[i]) rest.push_back(i);
    size_t next = 0;
    for (size_t i = 0; i < re.size(); ++i) {
      if (pair[i] >= 0 || identity(rec_, re[i]).size()) continue;  // identity-less: by position
      if (next < rest.size()) { pair[i] = static_cast<int64_t>(rest[next]); taken[rest[next]] = true; ++next; }
    }
    for (size_t i = 0; i < re.size(); ++i) {
      Push p(*this, "[" + std::to_string(i) + "]", true);
      if (pair[i] < 0 && config_synonym(r, l, rec_, re[i], json_text(rj[i]), "\"(absent)\"")) continue;
      if (pair[i] < 0) { presence(json_text(rj[i]), "\"(absent)\""); continue; }
      if (rj[i] != lj[static_cast<size_t>(pair[i])]) node(re[i], le[static_cast<size_t>(pair[i])]);
    }
    for (size_t i = 0; i < le.size(); ++i) {
      if (taken[i]) continue;
      Push p(*this, "[+" + std::to_string(i) + "]", true);
      if (config_synonym(r, l, live_, le[i], "\"(absent)\"", json_text(lj[i]))) continue;
      presence("\"(absent)\"", json_text(lj[i]));
    }
  }

  void run() {
    if (!rec_.body || !live_.body) return;
    Push p(*this, "body");
    structure(rec_.body, live_.body);
  }

 private:
  struct Push {
    Push(Walker& w, std::string seg, bool index = false) : w(w), len(w.path_.size()), index(index) {
      if (!index && !w.path_.empty()) w.path_ += '.';
      w.path_ += seg;
      if (!index) w.segs_.push_back(std::move(seg));
    }
    ~Push() {
      w.path_.resize(len);
      if (!index) w.segs_.pop_back();
    }
    Walker& w;
    size_t len;
    bool index;
  };

  std::string name_of(const Frame& f, uint32_t c) const {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag) return "_tag" + std::to_string(n.tag);
    return std::string(ps_.field(n.desc).json_name);
  }
  // Typed equality, without rendering text: what json_value would render equal.
  static bool same_leaf(const Frame& a, uint32_t i, const Frame& b, uint32_t j) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[j];
    if (x.is_null() != y.is_null() || x.type != y.type) return false;
    if (x.is_null()) return true;
    switch (x.type) {
      case WireType::Uuid: return std::memcmp(x.v.p, y.v.p, 16) == 0;
      case WireType::String: case WireType::VarString: case WireType::Bytes: case WireType::VarBytes:
        return x.aux == y.aux && (x.aux == 0 || std::memcmp(x.v.p, y.v.p, x.aux) == 0);
      case WireType::Float64: return x.v.f == y.v.f || (x.v.f != x.v.f && y.v.f != y.v.f);
      case WireType::Bool: return (x.v.i != 0) == (y.v.i != 0);
      default: return x.v.i == y.v.i;
    }
  }
  static bool same_subtree(const Frame& a, uint32_t i, const Frame& b, uint32_t j) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[j];
    if (x.desc != y.desc || x.tag != y.tag) return false;
    if (x.type != WireType::Struct && x.type != WireType::Array && x.type != WireType::Records) return same_leaf(a, i, b, j);
    if (x.is_null() != y.is_null() || x.type != y.type) return false;
    if (x.end - i != y.end - j) return false;  // different node counts
    uint32_t p = i + 1, q = j + 1;
    while (p < x.end) {
      if (!same_subtree(a, p, b, q)) return false;
      p = a.nodes[p].end;
      q = b.nodes[q].end;
    }
    return true;
  }

  std::string identity(const Frame& f, uint32_t element) const {
    static const std::string_view names[] = {"PartitionIndex", "Index", "PartitionId", "Partition", "TopicId",
                                             "Name", "Topic", "TopicName", "GroupId", "MemberId", "SubtopologyId"};
    std::string k, fallback;
    for (uint32_t c : Children(f, element)) {
      const FieldDesc& d = ps_.field(f.nodes[c].desc);
      if (f.nodes[c].desc == kDescUnknownTag) continue;
      if (d.flags & kMapKey) k += json_value(ps_, f, c) + ',';
      else if (std::find(std::begin(names), std::end(names), d.name) != std::end(names))
        fallback += json_value(ps_, f, c) + ',';
    }
    return k.empty() ? fallback : k;
  }

  // An element one side lists and the other does not.
  void presence(std::string recorded, std::string replayed) {
    std::vector<std::string_view> segs(segs_.begin(), segs_.end());
    for (const auto& rule : opts_.ignore)
      if (rule.presence_only && rule.pattern.matches(api_, segs) && rule.pattern.segments.size() == segs.size()) {
        out_.push_back({path_, std::move(recorded), std::move(replayed), rule.pattern.text, true});
        return;
      }
    diff(std::move(recorded), std::move(replayed));
  }

  // A count of replicas (a replica list, a replication factor) r recorded and
  // l live that follows from the two clusters' sizes alone: capped at the
  // target's brokers, or each the whole of its cluster (a broker default).
  bool shape_count(int64_t r, int64_t l) const {
    const int64_t rb = opts_.recorded_brokers, tb = opts_.target_brokers;
    if (rb <= 0 || tb <= 0 || rb == tb || r == l) return false;
    return l == std::min(r, tb) || (r == rb && l == tb);
  }
  // A count a config caps at the cluster's size: as shape_count, or one the
  // smaller cluster capped at its size where the other has another value its
  // size allows (transaction.state.log.min.isr: 1 on one broker, 2 on three).
  bool shape_cap(int64_t r, int64_t l) const {
    const int64_t rb = opts_.recorded_brokers, tb = opts_.target_brokers;
    if (shape_count(r, l)) return true;
    if (rb <= 0 || tb <= 0) return false;
    return (rb < tb && r == rb && l > r && l <= tb) || (tb < rb && l == tb && r > l && r <= rb);
  }
  std::string brokers_why() const { return std::string(kShapeRule) + "a broker list names every broker"; }
  std::string replicas_why() const {
    return std::string(kShapeRule) + "a partition has as many replicas as the target holds (at most " +
           std::to_string(opts_.target_brokers) + "; a broker default fills it)";
  }
  void shape(std::string recorded, std::string replayed, std::string why) {
    out_.push_back({path_, std::move(recorded), std::move(replayed), std::move(why), true});
  }
  // A partition's leader named in an answer (Metadata, DescribeTopicPartitions)
  // that is no broker of the target: a regression whatever the ids. True when
  // handled (reported).
  bool leader_check(uint32_t r, uint32_t l) {
    if (opts_.target_nodes.empty() || segs_.back() != "leaderId" || (api_ != "Metadata" && api_ != "DescribeTopicPartitions"))
      return false;
    const Node& ln = live_.nodes[l];
    if (!is_integer(ln.type) || ln.v.i < 0) return false;
    if (std::find(opts_.target_nodes.begin(), opts_.target_nodes.end(), ln.v.i) != opts_.target_nodes.end()) return false;
    out_.push_back({path_, json_value(ps_, rec_, r), json_value(ps_, live_, l),
                    "leader " + std::to_string(ln.v.i) + " is none of the target's brokers", false});
    return true;
  }

  void diff(std::string recorded, std::string replayed) {
    Difference d;
    d.path = path_;
    d.recorded = std::move(recorded);
    d.replayed = std::move(replayed);
    std::vector<std::string_view> segs(segs_.begin(), segs_.end());
    for (const auto& rule : opts_.ignore)
      if (!rule.presence_only && rule.pattern.matches(api_, segs)) { d.ignored = true; d.rule = rule.pattern.text; break; }
    out_.push_back(std::move(d));
  }

  static std::string json_list(const std::vector<std::string>& v) {
    std::string out = "[";
    for (size_t k = 0; k < v.size(); ++k) out += (k ? "," : "") + v[k];
    return out + "]";
  }

  static std::string json_text(const std::string& s) {
    if (s.empty()) return "\"(none yet)\"";
    return s;
  }

  const ProgramSet& ps_;
  const Frame& rec_;
  const Frame& live_;
  const CompareOptions& opts_;
  std::vector<Difference>& out_;
  StickyMemory* memory_;
  const std::string& member_;
  std::string_view api_;
  std::string path_;
  std::vector<std::string> segs_;
};

// Walks every node of a frame with its indexed and its plain path.
template <class F>
void each_path(const ProgramSet& ps, const Frame& f, uint32_t node, std::string& path, std::vector<std::string>& segs,
               F&& fn) {
  for (uint32_t c : Children(f, node)) {
    const Node& n = f.nodes[c];
    size_t len = path.size();
    bool element = n.flags & kElement;
    if (element) {
      // index among siblings
      uint32_t idx = 0;
      for (uint32_t s : Children(f, node)) { if (s == c) break; ++idx; }
      path += "[" + std::to_string(idx) + "]";
    } else {
      std::string name = n.desc == kDescUnknownTag ? "_tag" + std::to_string(n.tag) : std::string(ps.field(n.desc).json_name);
      path += "." + name;
      segs.push_back(name);
    }
    fn(c, path, segs);
    if (n.type == WireType::Struct || n.type == WireType::Array || n.type == WireType::Records)
      each_path(ps, f, c, path, segs, fn);
    path.resize(len);
    if (!element) segs.pop_back();
  }
}

std::string unquoted(const std::string& literal) {
  if (literal.size() >= 2 && literal.front() == '"') return literal.substr(1, literal.size() - 2);
  return literal;
}

}  // namespace

void check_expectations(const ProgramSet& ps, const Frame& live, const std::vector<ExpectRule>& expect,
                        std::vector<Difference>& out) {
  if (expect.empty() || !live.body || !live.program) return;
  const std::string_view api = live.program->api_name;
  for (const ExpectRule& e : expect) {
    if (!e.pattern.api.empty() && e.pattern.api != api) continue;
    const bool indexed = e.path.find('[') != std::string::npos;
    bool seen = false;
    std::string path = "body";
    std::vector<std::string> segs{"body"};
    each_path(ps, live, live.body, path, segs, [&](uint32_t c, const std::string& p, const std::vector<std::string>& s) {
      bool hit = indexed ? p == e.path : e.pattern.matches(api, std::vector<std::string_view>(s.begin(), s.end()));
      if (!hit) return;
      seen = true;
      std::string got = json_value(ps, live, c);
      bool ok = unquoted(got) == e.value;
      const FieldDesc& d = ps.field(live.nodes[c].desc);
      if (!ok && is_error_code_field(d)) ok = error_name(live.nodes[c].v.i) == e.value;
      if (!ok) {
        TextBuffer t;
        json_string(t, e.value);
        out.push_back({p, t.str(), got, "expect " + e.pattern.text + "=" + e.value, false});
      }
    });
    if (!seen && !e.pattern.api.empty()) {
      TextBuffer t;
      json_string(t, e.value);
      out.push_back({e.path, t.str(), "\"(absent)\"", "expect " + e.pattern.text + "=" + e.value, false});
    }
  }
}

namespace {

// What an answer says of the target's nodes (CompareOptions::target_nodes):
// each node it names with an endpoint is one of the target's, at the endpoint
// the target gives it elsewhere, and each leader hint names a node of the
// target that the answer's nodeEndpoints list. Regressions otherwise.
class NodeCheck {
 public:
  NodeCheck(const ProgramSet& ps, const Frame& f, const CompareOptions& o, std::vector<Difference>& out)
      : ps_(ps), f_(f), o_(o), out_(out) {}

  void run() {
    if (o_.target_nodes.empty() || !f_.body || !f_.program) return;
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
  bool target_node(int64_t id) const {
    return std::find(o_.target_nodes.begin(), o_.target_nodes.end(), id) != o_.target_nodes.end();
  }
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
    if (!o_.target_endpoints) return;
    auto it = o_.target_endpoints->find(static_cast<int32_t>(node));
    if (it == o_.target_endpoints->end()) return;
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
  const CompareOptions& o_;
  std::vector<Difference>& out_;
  bool has_endpoints_ = false;
  std::set<int64_t> listed_;
};

}  // namespace

void compare(const ProgramSet& ps, const Frame& recorded, const Frame& live, const CompareOptions& opts,
             std::vector<Difference>& out, StickyMemory* memory, const std::string& member) {
  Walker(ps, recorded, live, opts, out, memory, member).run();
  NodeCheck(ps, live, opts, out).run();
  check_expectations(ps, live, opts.expect, out);
}

}  // namespace kwire::replay
