#include "replay/compare_roles.hpp"

namespace kwire::replay {

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
  return has_status_code(ps, live, kAssignmentDelayed) && recorded.program && recorded.body &&
         !has_status_code(ps, recorded, kAssignmentDelayed);
}

bool listed(const std::vector<StickyField>& list, std::string_view api, std::string_view path) {
  for (const auto& s : list)
    if (s.api == api && s.path == path) return true;
  return false;
}

bool timer_element(const ProgramSet& ps, const Frame& f, uint32_t el, std::string_view api, std::string_view path) {
  for (const auto& t : timer_statuses()) {
    if (t.api != api || t.path != path || f.nodes[el].type != WireType::Struct) continue;
    for (uint32_t c : Children(f, el))
      if (ps.field(f.nodes[c].desc).json_name == t.code_field && f.nodes[c].v.i == t.code) return true;
  }
  return false;
}

bool timer_pending(const ProgramSet& ps, const Frame& live, std::string_view api) {
  if (!live.body) return false;
  for (uint32_t c : Children(live, live.body)) {
    const Node& n = live.nodes[c];
    if (n.desc == kDescUnknownTag || n.is_null() || n.type != WireType::Array) continue;
    const std::string field = "body." + std::string(ps.field(n.desc).json_name);
    for (const auto& t : timer_statuses()) {
      if (t.api != api || t.path != field || t.code != kAssignmentDelayed) continue;
      for (uint32_t el : Children(live, c)) {
        if (live.nodes[el].type != WireType::Struct) continue;
        for (uint32_t f : Children(live, el))
          if (live.nodes[f].desc != kDescUnknownTag && ps.field(live.nodes[f].desc).json_name == t.code_field &&
              live.nodes[f].v.i == t.code)
            return true;
      }
    }
  }
  return false;
}

std::string member_key(std::string_view member, std::string_view api, std::string_view path) {
  std::string key(member);
  key += '\x1f';
  key += api;
  key += '\x1f';
  key += path;
  return key;
}

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

RoleVerdict match_ask(StickyMemory& memory, const std::string& key, bool a, bool b) {
  int& balance = memory.ask_balance[key];  // recorded asks minus the target's
  int& left = memory.asks_left[key];       // recorded asks from this answer on
  const int before = balance;
  if (a && left > 0) --left;
  balance += int(a) - int(b);
  RoleVerdict v{a ? "true" : "false", b ? "true" : "false", a != b, {}};
  if (a == b) return v;
  if (a) {
    v.timing = before < 0 ? "the target asked at an earlier heartbeat (timing)"
                          : "the target has not asked yet; its back-off has jitter (timing)";
    return v;
  }
  // The target's earlier asks not yet matched (-before) claim as many of the
  // capture's later ones.
  if (before > 0 || left > -before)
    v.timing = before > 0 ? "the capture asked at an earlier heartbeat (timing)" : "the capture asks at a later heartbeat (timing)";
  return v;
}

namespace {
// A sticky value as reported: the member has had none yet.
std::string sticky_text(const std::string& s) { return s.empty() ? "\"(none yet)\"" : s; }
}  // namespace

RoleVerdict match_sticky(StickyMemory& memory, const std::string& key, const std::optional<std::string>& rec,
                         const std::optional<std::string>& live, bool pending) {
  std::string a, b;
  const std::string previous = memory.recorded[key];
  if (rec) { a = *rec; memory.recorded[key] = a; } else a = memory.recorded[key];
  if (live) { b = *live; memory.live[key] = b; } else b = memory.live[key];
  RoleVerdict v{sticky_text(a), sticky_text(b), a != b, {}};
  if (a == b) return v;
  auto next = memory.next.find(key);
  if ((next != memory.next.end() && next->second == b) || (!previous.empty() && previous == b))
    v.timing = "one heartbeat earlier or later (timing)";
  else if (pending)
    // Heartbeats sent faster than recorded (--timing fast) come before the
    // target's timer fires, however many of them there are. Which heartbeat
    // gets the assignment is timing.
    v.timing = "the target's assignment waits for a timer (timing)";
  return v;
}

}  // namespace kwire::replay
