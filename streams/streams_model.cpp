#include "streams/streams_model.hpp"

#include <algorithm>
#include <cstdio>

#include "dissector/protocol/brokers.hpp"
#include "dissector/protocol/codes.hpp"

namespace kwire::streams {

namespace {

constexpr const char* kStatusNames[] = {"STALE_TOPOLOGY",        "MISSING_SOURCE_TOPICS", "INCORRECTLY_PARTITIONED_TOPICS",
                                        "MISSING_INTERNAL_TOPICS", "SHUTDOWN_APPLICATION", "ASSIGNMENT_DELAYED",
                                        "MISSING_CLIENT_TAGS"};

// Reading fields of a decoded frame by spec name. A missing field (another
// version, an overlay) reads as absent, never as an error.
struct Reader {
  const Frame& f;
  const ProgramSet& ps;

  // Index of the child of `node` named `name`, or -1.
  int64_t child(uint32_t node, std::string_view name) const {
    if (node >= f.nodes.size()) return -1;
    for (uint32_t c : Children(f, node))
      if (ps.field(f.nodes[c].desc).name == name) return c;
    return -1;
  }
  const Node* get(uint32_t node, std::string_view name) const {
    int64_t i = child(node, name);
    return i < 0 ? nullptr : &f.nodes[static_cast<size_t>(i)];
  }
  bool present(uint32_t node, std::string_view name) const {
    const Node* n = get(node, name);
    return n && !n->is_null();
  }
  std::string str(uint32_t node, std::string_view name) const {
    const Node* n = get(node, name);
    return n && !n->is_null() && (n->type == WireType::String) ? std::string(n->str()) : std::string();
  }
  int64_t num(uint32_t node, std::string_view name, int64_t dflt = 0) const {
    const Node* n = get(node, name);
    return n && !n->is_null() && (is_integer(n->type) || n->type == WireType::Bool) ? n->v.i : dflt;
  }
  // Elements of an array field (empty when null or absent).
  std::vector<uint32_t> elements(uint32_t node, std::string_view name) const {
    std::vector<uint32_t> out;
    int64_t i = child(node, name);
    if (i < 0 || f.nodes[static_cast<size_t>(i)].is_null()) return out;
    for (uint32_t e : Children(f, static_cast<uint32_t>(i))) out.push_back(e);
    return out;
  }
  std::vector<std::string> strings(uint32_t node, std::string_view name) const {
    std::vector<std::string> out;
    for (uint32_t e : elements(node, name))
      if (f.nodes[e].type == WireType::String && !f.nodes[e].is_null()) out.emplace_back(f.nodes[e].str());
    return out;
  }
  std::string error(uint32_t node) const {
    int64_t code = num(node, "ErrorCode", 0);
    std::string_view n = error_name(code);
    return n.empty() ? "ERROR_" + std::to_string(code) : std::string(n);
  }
  // TaskIds list -> "sub_partition" names.
  std::set<std::string> tasks(uint32_t node, std::string_view name) const {
    std::set<std::string> out;
    for (uint32_t t : elements(node, name)) {
      std::string sub = str(t, "SubtopologyId");
      int64_t parts = child(t, "Partitions");
      if (parts < 0 || f.nodes[static_cast<size_t>(parts)].is_null()) continue;
      for (uint32_t p : Children(f, static_cast<uint32_t>(parts))) out.insert(sub + "_" + std::to_string(f.nodes[p].v.i));
    }
    return out;
  }
  TopoNode topo_node(uint32_t n) const {
    TopoNode t;
    t.name = str(n, "Name");
    t.type = static_cast<int>(num(n, "NodeType", 0));
    t.source_topics = strings(n, "SourceTopics");
    t.has_sink_topic = present(n, "SinkTopic");
    t.sink_topic = str(n, "SinkTopic");
    t.stores = strings(n, "Stores");
    t.successors = strings(n, "Successors");
    return t;
  }
  std::vector<std::string> topic_infos(uint32_t node, std::string_view name) const {
    std::vector<std::string> out;
    for (uint32_t e : elements(node, name)) out.push_back(str(e, "Name"));
    return out;
  }
};

bool is_heartbeat(std::string_view api) { return api == "StreamsGroupHeartbeat"; }
bool is_describe(std::string_view api) { return api == "StreamsGroupDescribe"; }
// The released name and the KIP-1331 draft's (overlay kip-1331-draft).
bool is_push(std::string_view api) {
  return api == "StreamsGroupTopologyDescriptionUpdate" || api == "UpdateStreamsGroupTopologyDescription";
}
bool is_delete(std::string_view api) { return api == "DeleteGroups"; }

// Causes name the frame where they were first seen: a member that retries
// its join (say after COORDINATOR_LOAD_IN_PROGRESS) joined once.
void add_cause(Group& g, std::string cause) {
  const std::string key = cause.substr(0, cause.find(" (frame"));
  for (const auto& c : g.pending_causes)
    if (c.compare(0, key.size(), key) == 0 && (c.size() == key.size() || c.compare(key.size(), 7, " (frame") == 0)) return;
  g.pending_causes.push_back(std::move(cause));
}

std::string frame_ref(const At& at) { return "frame " + std::to_string(at.frame); }

// Predecessors from successors, within a subtopology and a global store.
void link(std::vector<TopoNode*> nodes) {
  for (TopoNode* n : nodes) n->predecessors.clear();
  for (TopoNode* n : nodes)
    for (const auto& s : n->successors)
      for (TopoNode* m : nodes)
        if (m->name == s) m->predecessors.push_back(n->name);
}

// Description of a topology (TopologyDescription struct of KIP-1331).
Topology description(const Reader& r, uint32_t td) {
  Topology t;
  t.present = true;
  t.described = true;
  for (uint32_t s : r.elements(td, "Subtopologies")) {
    Subtopology sub;
    sub.id = r.str(s, "SubtopologyId");
    for (uint32_t n : r.elements(s, "Nodes")) sub.nodes.push_back(r.topo_node(n));
    std::vector<TopoNode*> ptrs;
    for (auto& n : sub.nodes) ptrs.push_back(&n);
    link(ptrs);
    t.subtopologies.push_back(std::move(sub));
  }
  for (uint32_t g : r.elements(td, "GlobalStores")) {
    GlobalStore gs;
    int64_t src = r.child(g, "Source"), proc = r.child(g, "Processor");
    if (src >= 0) gs.source = r.topo_node(static_cast<uint32_t>(src));
    if (proc >= 0) gs.processor = r.topo_node(static_cast<uint32_t>(proc));
    link({&gs.source, &gs.processor});
    t.global_stores.push_back(std::move(gs));
  }
  return t;
}

// The heartbeat's (or describe's) Topology struct: subtopologies with topics.
Topology topic_topology(const Reader& r, uint32_t topo) {
  Topology t;
  t.present = true;
  t.epoch = static_cast<int32_t>(r.num(topo, "Epoch", -1));
  for (uint32_t s : r.elements(topo, "Subtopologies")) {
    Subtopology sub;
    sub.id = r.str(s, "SubtopologyId");
    sub.source_topics = r.strings(s, "SourceTopics");
    sub.source_regex = r.strings(s, "SourceTopicRegex");
    sub.repartition_sink_topics = r.strings(s, "RepartitionSinkTopics");
    sub.repartition_source_topics = r.topic_infos(s, "RepartitionSourceTopics");
    sub.changelog_topics = r.topic_infos(s, "StateChangelogTopics");
    t.subtopologies.push_back(std::move(sub));
  }
  return t;
}

}  // namespace

const char* kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::Active: return "active";
    case TaskKind::Standby: return "standby";
    case TaskKind::Warmup: return "warm-up";
  }
  return "?";
}

std::string status_name(int code) {
  if (code >= 0 && code < static_cast<int>(std::size(kStatusNames))) return kStatusNames[code];
  return "STATUS_" + std::to_string(code);
}

Member& Group::member(const std::string& mid, const At& at) {
  auto it = members.find(mid);
  if (it != members.end()) return it->second;
  member_order.push_back(mid);
  Member& m = members[mid];
  m.id = mid;
  m.first_seen = m.last_seen = at;
  return m;
}

// What a request left for its response: matched per connection and correlation id.
struct StreamsModel::Pending {
  std::string api;
  std::string group;
  std::string member;
  int32_t epoch = 0;
  size_t push = 0;  // index into the group's pushes
  At at;
  std::string broker;  // where the request went
};

StreamsModel::StreamsModel(const ProgramSet& ps) : ps_(ps) {}
StreamsModel::~StreamsModel() = default;

At StreamsModel::at(const FrameContext& ctx) {
  if (!first_set_) {
    first_sec_ = ctx.packet.ts_sec;
    first_usec_ = ctx.packet.ts_usec;
    first_set_ = true;
  }
  At a;
  a.frame = ctx.packet.number ? ctx.packet.number : ctx.number;
  a.time = static_cast<double>(ctx.packet.ts_sec - first_sec_) + (ctx.packet.ts_usec - first_usec_) / 1e6;
  return a;
}

Group& StreamsModel::group(const std::string& id) {
  auto it = s_.groups.find(id);
  if (it != s_.groups.end()) return it->second;
  s_.group_order.push_back(id);
  Group& g = s_.groups[id];
  g.id = id;
  return g;
}

void StreamsModel::on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) {
  std::string e = where + ": " + reason;
  if (meta.number) e += " (packet " + std::to_string(meta.number) + ")";
  if (capture_errors_.size() < 100) capture_errors_.push_back(std::move(e));
}

void StreamsModel::on_connection_end(const TcpConnection& c) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->first.first == &c) it = pending_.erase(it);
    else ++it;
  }
}

void StreamsModel::on_frame(const FrameContext& ctx, const Frame& f) {
  if (ctx.not_kafka) return;
  const At a = at(ctx);
  ++s_.frames;
  if (!f.program) return;
  learn_broker_nodes(f, ps_, s_.node_ids);
  const std::string_view api = f.program->api_name;
  if (!is_heartbeat(api) && !is_describe(api) && !is_push(api) && !is_delete(api)) return;
  ++s_.streams_frames;
  if (!f.ok()) ++s_.malformed;  // what decoded before the damage is still read
  if (f.direction == Direction::Request) {
    if (is_heartbeat(api)) heartbeat_request(ctx, f, a);
    else if (is_push(api)) push_request(ctx, f, a);
    else if (is_delete(api)) delete_request(ctx, f, a);
    return;
  }
  if (is_describe(api)) return describe_response(f, a);
  if (is_delete(api)) {
    pending_.erase({ctx.conn, f.correlation_id});
    return delete_response(f, a);
  }
  auto it = pending_.find({ctx.conn, f.correlation_id});
  if (it == pending_.end()) return;  // its request was not captured: no group to put it in
  std::unique_ptr<Pending> p = std::move(it->second);
  pending_.erase(it);
  if (p->api != api) return;
  if (is_heartbeat(api)) heartbeat_response(f, *p, a);
  else if (is_push(api)) push_response(f, *p, a);
}

void StreamsModel::heartbeat_request(const FrameContext& ctx, const Frame& f, const At& a) {
  Reader r{f, ps_};
  const uint32_t b = f.body;
  const std::string gid = r.str(b, "GroupId");
  const std::string mid = r.str(b, "MemberId");
  const int32_t epoch = static_cast<int32_t>(r.num(b, "MemberEpoch", 0));
  Group& g = group(gid);
  Member& m = g.member(mid, a);
  ++m.heartbeats;
  const std::string client = r.str(0, "ClientId");
  if (!client.empty()) m.client_id = client;

  // Late: the member's next heartbeat is due one interval after its previous
  // one, or when that one was answered if the answer took longer.
  if (epoch > 0 && m.last_response && m.interval_at_last_response > 0 && !m.left) {
    const double interval = m.interval_at_last_response / 1000.0;
    const double due = std::max(m.last_seen.time + interval, m.last_response->time);
    const double late = a.time - due;
    if (late > interval / 2) {
      char d[160];
      snprintf(d, sizeof d, "heartbeat %.3f s after the previous one (frame %llu); the coordinator asked for one every %d ms",
               a.time - m.last_seen.time, static_cast<unsigned long long>(m.last_seen.frame), m.interval_at_last_response);
      g.anomalies.push_back({a, "late-heartbeat", mid, d});
    }
  }
  m.last_seen = a;

  if (epoch == 0) {
    add_cause(g, "member " + mid + " joined (" + frame_ref(a) + ")");
    m.left = false;
    m.left_at.reset();
    m.stuck_reported_for = -1;
  } else if (epoch < 0) {
    add_cause(g, std::string("member ") + mid + (epoch == -2 ? " left temporarily (static member, " : " left (") +
                     frame_ref(a) + ")");
    m.left = true;
    m.left_at = a;
  }
  if (r.present(b, "InstanceId")) m.instance_id = r.str(b, "InstanceId");
  if (r.present(b, "RackId")) m.rack = r.str(b, "RackId");
  if (r.present(b, "ProcessId")) m.process_id = r.str(b, "ProcessId");
  if (r.present(b, "UserEndpoint")) {
    int64_t ep = r.child(b, "UserEndpoint");
    m.endpoint = r.str(static_cast<uint32_t>(ep), "Host") + ":" + std::to_string(r.num(static_cast<uint32_t>(ep), "Port"));
  }
  if (r.present(b, "ClientTags")) {
    m.client_tags.clear();
    for (uint32_t kv : r.elements(b, "ClientTags")) m.client_tags[r.str(kv, "Key")] = r.str(kv, "Value");
  }
  if (r.num(b, "ShutdownApplication", 0)) add_cause(g, "member " + mid + " asked to shut the application down (" + frame_ref(a) + ")");
  if (r.present(b, "Topology")) {
    Topology t = topic_topology(r, static_cast<uint32_t>(r.child(b, "Topology")));
    t.origin = "StreamsGroupHeartbeat";
    t.at = a;
    m.topology_epoch = t.epoch;
    if (g.topology_epoch >= 0 && t.epoch > g.topology_epoch)
      add_cause(g, "topology epoch " + std::to_string(g.topology_epoch) + " -> " + std::to_string(t.epoch) + " sent by member " +
                       mid + " (" + frame_ref(a) + ")");
    g.topology_epoch = std::max(g.topology_epoch, t.epoch);
    g.heartbeat_topology = t;
    if (!g.topology.described) g.topology = std::move(t);
  }
  auto p = std::make_unique<Pending>();
  p->api = "StreamsGroupHeartbeat";
  p->group = gid;
  p->member = mid;
  p->epoch = epoch;
  p->at = a;
  p->broker = ctx.dst.str();
  pending_[{ctx.conn, f.correlation_id}] = std::move(p);
}

void StreamsModel::heartbeat_response(const Frame& f, const Pending& p, const At& a) {
  Reader r{f, ps_};
  const uint32_t b = f.body;
  Group& g = group(p.group);
  std::string mid = p.member;
  if (mid.empty()) mid = r.str(b, "MemberId");
  Member& m = g.member(mid, a);
  m.last_response = a;
  const int32_t interval = static_cast<int32_t>(r.num(b, "HeartbeatIntervalMs", 0));
  if (interval > 0) m.heartbeat_interval_ms = interval;
  m.interval_at_last_response = m.heartbeat_interval_ms;
  const std::string err = r.error(b);
  // Every answer but these two comes from the group's coordinator.
  if (err != "NOT_COORDINATOR" && err != "COORDINATOR_NOT_AVAILABLE" && !p.broker.empty()) {
    if (g.coordinators.empty() || g.coordinators.back().broker != p.broker) g.coordinators.push_back({p.broker, a, a, 0});
    g.coordinators.back().last = a;
    ++g.coordinators.back().answered;
  }
  if (err != "NONE") {
    m.errors.push_back({a, "StreamsGroupHeartbeat", err, r.str(b, "ErrorMessage")});
    if (err == "FENCED_MEMBER_EPOCH" || err == "UNKNOWN_MEMBER_ID") {
      add_cause(g, "member " + mid + " fenced: " + err + " (" + frame_ref(a) + ")");
      m.left = true;
      m.left_at = a;
      assign(g, m, Assignment{}, -1, a);
    }
    return;
  }
  const int32_t epoch = static_cast<int32_t>(r.num(b, "MemberEpoch", 0));
  if (epoch != m.epoch) m.epochs.push_back({a, epoch, p.epoch});
  m.epoch = epoch;

  // Statuses: each change of the set the coordinator reports.
  StatusChange sc;
  sc.at = a;
  for (uint32_t s : r.elements(b, "Status")) sc.statuses[static_cast<int>(r.num(s, "StatusCode", -1))] = r.str(s, "StatusDetail");
  const std::map<int, std::string> before = m.statuses.empty() ? std::map<int, std::string>{} : m.statuses.back().statuses;
  auto codes = [](const std::map<int, std::string>& s) {
    std::set<int> c;
    for (const auto& [k, v] : s) c.insert(k);
    return c;
  };
  if (codes(before) != codes(sc.statuses) || (m.statuses.empty() && !sc.statuses.empty())) {
    for (const auto& [code, detail] : sc.statuses)
      if (!before.count(code) && code != 5) add_cause(g, "status " + status_name(code) + " for member " + mid + " (" + frame_ref(a) + ")");
    for (const auto& [code, detail] : before)
      if (!sc.statuses.count(code)) add_cause(g, "status " + status_name(code) + " cleared for member " + mid + " (" + frame_ref(a) + ")");
    m.statuses.push_back(std::move(sc));
  }

  if (p.epoch < 0 || epoch < 0) {
    m.left = true;
    if (!m.left_at) m.left_at = a;
    assign(g, m, Assignment{}, epoch, a);
  } else if (r.present(b, "ActiveTasks") || r.present(b, "StandbyTasks") || r.present(b, "WarmupTasks")) {
    Assignment as;
    as.tasks[0] = r.tasks(b, "ActiveTasks");
    as.tasks[1] = r.tasks(b, "StandbyTasks");
    as.tasks[2] = r.tasks(b, "WarmupTasks");
    assign(g, m, as, epoch, a);
  }

  if (epoch > g.group_epoch) {
    if (g.group_epoch >= 0 || !g.pending_causes.empty()) {
      Rebalance rb;
      rb.at = a;
      rb.from = std::max(g.group_epoch, 0);
      rb.to = epoch;
      rb.by = mid;
      rb.causes = std::move(g.pending_causes);
      g.rebalances.push_back(std::move(rb));
    }
    g.pending_causes.clear();
    g.group_epoch = epoch;
    g.group_epoch_at = a;
  }
  check_stuck(g, a);
  (void)m;
}

void StreamsModel::assign(Group& g, Member& m, const Assignment& as, int32_t epoch, const At& a) {
  if (!m.assignments.empty() && as == m.current) return;
  if (m.assignments.empty() && as == Assignment{} && epoch < 0) return;
  for (int k = 0; k < 3; ++k) {
    for (const auto& t : as.tasks[k]) {
      if (m.current.tasks[k].count(t)) continue;
      auto& owner = g.last_owner[{k, t}];
      if (owner != m.id) g.moves.push_back({a, t, static_cast<TaskKind>(k), owner, m.id});
      owner = m.id;
    }
  }
  // An active task handed to this member while another member still holds it.
  for (const auto& t : as.tasks[0]) {
    for (const auto& oid : g.member_order) {
      if (oid == m.id) continue;
      const Member& o = g.members.at(oid);
      if (o.left || !o.current.tasks[0].count(t)) continue;
      const std::string key = t + "|" + std::min(oid, m.id) + "|" + std::max(oid, m.id);
      if (!g.double_active_reported.insert(key).second) continue;
      g.anomalies.push_back({a, "double-active", m.id,
                             "task " + t + " handed to member " + m.id + " as active while member " + oid +
                                 " still holds it as active (since " + frame_ref(o.assignments.empty() ? a : o.assignments.back().at) + ")"});
    }
  }
  m.current = as;
  m.assignments.push_back({a, epoch, as});
}

void StreamsModel::check_stuck(Group& g, const At& a) {
  for (const auto& mid : g.member_order) {
    Member& m = g.members.at(mid);
    if (m.left || m.epoch < 0 || m.epoch >= g.group_epoch || m.stuck_reported_for == g.group_epoch) continue;
    if (!m.last_response || m.last_response->time <= g.group_epoch_at.time) continue;  // not answered since the bump
    const double interval = std::max(m.heartbeat_interval_ms, 1000) / 1000.0;
    if (a.time - g.group_epoch_at.time < 3 * interval) continue;
    m.stuck_reported_for = g.group_epoch;
    char d[200];
    snprintf(d, sizeof d, "member %s still at epoch %d %.3f s after the group moved to epoch %d (frame %llu)", mid.c_str(),
             m.epoch, a.time - g.group_epoch_at.time, g.group_epoch, static_cast<unsigned long long>(g.group_epoch_at.frame));
    g.anomalies.push_back({*m.last_response, "stuck-epoch", mid, d});
  }
}

void StreamsModel::push_request(const FrameContext& ctx, const Frame& f, const At& a) {
  Reader r{f, ps_};
  const uint32_t b = f.body;
  Group& g = group(r.str(b, "GroupId"));
  Push push;
  push.at = a;
  push.member = r.str(b, "MemberId");
  push.topology_epoch = static_cast<int32_t>(r.num(b, "TopologyEpoch", 0));
  int64_t td = r.child(b, "TopologyDescription");
  if (td >= 0 && !f.nodes[static_cast<size_t>(td)].is_null()) {
    Topology t = description(r, static_cast<uint32_t>(td));
    t.origin = std::string(f.program->api_name);
    t.at = a;
    t.epoch = push.topology_epoch;
    for (const auto& s : t.subtopologies) push.nodes += s.nodes.size();
    push.nodes += 2 * t.global_stores.size();
    g.topology = std::move(t);
  }
  if (!push.member.empty()) g.member(push.member, a);
  g.pushes.push_back(push);
  auto p = std::make_unique<Pending>();
  p->api = std::string(f.program->api_name);
  p->group = g.id;
  p->member = push.member;
  p->push = g.pushes.size() - 1;
  p->at = a;
  pending_[{ctx.conn, f.correlation_id}] = std::move(p);
}

void StreamsModel::push_response(const Frame& f, const Pending& p, const At& a) {
  Reader r{f, ps_};
  Group& g = group(p.group);
  if (p.push >= g.pushes.size()) return;
  Push& push = g.pushes[p.push];
  push.answered = a;
  push.error = r.error(f.body);
  push.message = r.str(f.body, "ErrorMessage");
  if (push.error != "NONE") {
    ++g.push_failures;
    if (!p.member.empty()) g.member(p.member, a).errors.push_back({a, std::string(f.program->api_name), push.error, push.message});
  }
}

void StreamsModel::describe_response(const Frame& f, const At& a) {
  Reader r{f, ps_};
  for (uint32_t e : r.elements(f.body, "Groups")) {
    Group& g = group(r.str(e, "GroupId"));
    Describe d;
    d.at = a;
    d.error = r.error(e);
    d.state = r.str(e, "GroupState");
    d.group_epoch = static_cast<int32_t>(r.num(e, "GroupEpoch", -1));
    d.assignment_epoch = static_cast<int32_t>(r.num(e, "AssignmentEpoch", -1));
    d.assignor = r.str(e, "AssignorName");
    if (r.child(e, "TopologyDescriptionStatus") >= 0) {
      static constexpr const char* kNames[] = {"NOT_REQUESTED", "NOT_STORED", "ERROR", "AVAILABLE"};
      int64_t s = r.num(e, "TopologyDescriptionStatus", -1);
      d.description_status = s >= 0 && s < 4 ? kNames[s] : std::to_string(s);
    }
    if (r.present(e, "Topology")) {
      uint32_t t = static_cast<uint32_t>(r.child(e, "Topology"));
      d.topology_epoch = static_cast<int32_t>(r.num(t, "Epoch", -1));
      if (!g.topology.present) {
        g.topology = topic_topology(r, t);
        g.topology.origin = "StreamsGroupDescribe";
        g.topology.at = a;
      }
    }
    if (r.present(e, "TopologyDescription")) {
      Topology t = description(r, static_cast<uint32_t>(r.child(e, "TopologyDescription")));
      if (!t.subtopologies.empty() || !t.global_stores.empty()) {
        t.origin = "StreamsGroupDescribe";
        t.at = a;
        t.epoch = d.topology_epoch;
        if (!g.topology.described) g.topology = std::move(t);
      }
    }
    const auto members = r.elements(e, "Members");
    d.members = members.size();
    for (uint32_t mm : members) {
      Member& m = g.member(r.str(mm, "MemberId"), a);
      if (m.client_id.empty()) m.client_id = r.str(mm, "ClientId");
      if (m.process_id.empty()) m.process_id = r.str(mm, "ProcessId");
      if (m.rack.empty()) m.rack = r.str(mm, "RackId");
      if (m.instance_id.empty()) m.instance_id = r.str(mm, "InstanceId");
      if (m.client_tags.empty())
        for (uint32_t kv : r.elements(mm, "ClientTags")) m.client_tags[r.str(kv, "Key")] = r.str(kv, "Value");
      if (m.topology_epoch < 0) m.topology_epoch = static_cast<int32_t>(r.num(mm, "TopologyEpoch", -1));
    }
    g.describes.push_back(std::move(d));
  }
}

void StreamsModel::delete_request(const FrameContext&, const Frame&, const At&) {}

void StreamsModel::delete_response(const Frame& f, const At& a) {
  Reader r{f, ps_};
  for (uint32_t e : r.elements(f.body, "Results")) {
    auto it = s_.groups.find(r.str(e, "GroupId"));
    if (it == s_.groups.end()) continue;  // not a streams group this capture showed
    Group& g = it->second;
    g.deletes.push_back({a, r.error(e), r.str(e, "ErrorMessage")});
    if (g.deletes.back().error != "NONE") continue;
    // Deleted: a group of the same name starts again from epoch 0 with a new
    // topology; its members are gone.
    for (auto& [mid, m] : g.members) {
      if (!m.left) { m.left = true; m.left_at = a; }
      m.current = Assignment{};
    }
    g.epoch_before_delete = g.group_epoch;
    g.group_epoch = -1;
    g.topology_epoch = -1;
    g.last_owner.clear();
    g.pending_causes.clear();
    add_cause(g, "group deleted (" + frame_ref(a) + ")");
  }
}

const Summary& StreamsModel::finish() {
  if (finished_) return s_;
  finished_ = true;
  for (auto& [gid, g] : s_.groups) {
    // Every failed push, and whether a later push of the group was stored.
    for (size_t i = 0; i < g.pushes.size(); ++i) {
      const Push& p = g.pushes[i];
      if (p.error.empty() || p.error == "NONE") continue;
      const Push* later = nullptr;
      for (size_t j = i + 1; j < g.pushes.size() && !later; ++j)
        if (g.pushes[j].error == "NONE") later = &g.pushes[j];
      std::string d = "topology description push (" + frame_ref(p.at) + ") failed: " + p.error +
                      (p.message.empty() ? "" : " \"" + p.message + "\"");
      d += later ? "; a later push was stored (" + frame_ref(later->answered ? *later->answered : later->at) + ")"
                 : "; no later push was stored";
      g.anomalies.push_back({p.answered ? *p.answered : p.at, "push-failed", p.member, d});
    }
    if (g.push_failures >= 2) {
      std::string d = std::to_string(g.push_failures) + " of " + std::to_string(g.pushes.size()) +
                      " topology description pushes failed:";
      const Push* last = nullptr;
      for (const auto& p : g.pushes) {
        if (p.error.empty() || p.error == "NONE") continue;
        d += " frame " + std::to_string(p.answered ? p.answered->frame : p.at.frame) + " " + p.error;
        last = &p;
      }
      g.anomalies.push_back({last && last->answered ? *last->answered : At{}, "push-failures", last ? last->member : "", d});
    }
    std::stable_sort(g.anomalies.begin(), g.anomalies.end(),
                     [](const Anomaly& x, const Anomaly& y) { return x.at.frame < y.at.frame; });
  }
  return s_;
}

}  // namespace kwire::streams
