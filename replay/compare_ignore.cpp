#include "replay/compare_ignore.hpp"

#include <cstdint>
#include <set>

namespace kwire::replay {

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

const IgnoreRule* value_rule(const std::vector<IgnoreRule>& rules, std::string_view api,
                             const std::vector<std::string_view>& segs) {
  for (const auto& rule : rules)
    if (!rule.presence_only && rule.pattern.matches(api, segs)) return &rule;
  return nullptr;
}

const IgnoreRule* presence_rule(const std::vector<IgnoreRule>& rules, std::string_view api,
                                const std::vector<std::string_view>& segs) {
  for (const auto& rule : rules)
    if (rule.presence_only && rule.pattern.matches(api, segs) && rule.pattern.segments.size() == segs.size()) return &rule;
  return nullptr;
}

const std::vector<WallClockField>& wall_clock_fields() {
  static const std::vector<WallClockField> v = pattern_table<WallClockField>({
      {"DescribeTransactions:body.transactionStates.transactionStartTimeMs",
       "when the coordinator saw the transaction's first partition"},
  });
  return v;
}

bool run_time(std::string_view api, const std::vector<std::string_view>& segs, int64_t recorded, int64_t live,
              int64_t run_from_ms, int64_t run_to_ms) {
  constexpr int64_t kSlackMs = 1000;
  if (run_from_ms <= 0 || recorded < 0 || live < 0) return false;
  bool listed = false;
  for (const auto& w : wall_clock_fields()) listed = listed || w.pattern.matches_exactly(api, segs);
  if (!listed) return false;
  const int64_t to = run_to_ms > 0 ? run_to_ms : INT64_MAX - kSlackMs;
  return live >= run_from_ms - kSlackMs && live <= to + kSlackMs;
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

const HostConfig* host_config(std::string_view name) {
  for (const auto& h : host_configs())
    if (h.name == name) return &h;
  return nullptr;
}

const Node* config_field(const ProgramSet& ps, const Frame& f, uint32_t config, std::string_view field) {
  if (f.nodes[config].type != WireType::Struct) return nullptr;
  for (uint32_t c : Children(f, config))
    if (f.nodes[c].desc != kDescUnknownTag && ps.field(f.nodes[c].desc).name == field && f.nodes[c].type == WireType::String)
      return &f.nodes[c];
  return nullptr;
}

std::string_view config_name(const ProgramSet& ps, const Frame& f, uint32_t config) {
  const Node* n = config_field(ps, f, config, "Name");
  return n && !n->is_null() ? n->str() : std::string_view();
}

uint32_t result_of(const Frame& f, uint32_t n) {
  while (n && n != f.body && f.nodes[n].parent && f.nodes[f.nodes[n].parent].parent != f.body) n = f.nodes[n].parent;
  return n;
}

std::map<std::string, std::string> resource_configs(const ProgramSet& ps, const Frame& f, uint32_t result) {
  std::map<std::string, std::string> out;
  if (f.nodes[result].type != WireType::Struct) return out;
  for (uint32_t c : Children(f, result)) {
    if (f.nodes[c].type != WireType::Array) continue;
    for (uint32_t el : Children(f, c)) {
      if (f.nodes[el].type != WireType::Struct) continue;
      const Node* value = config_field(ps, f, el, "Value");
      if (value && !value->is_null()) out.emplace(std::string(config_name(ps, f, el)), std::string(value->str()));
    }
  }
  return out;
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

}  // namespace kwire::replay
