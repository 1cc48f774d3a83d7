#include "replay/state.hpp"

#include <cstring>

#include "dissector/protocol/records.hpp"
#include "replay/timeshift.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

const std::vector<StateRule>& state_rules() {
  static const std::vector<StateRule> rules = {
      {"member epoch",
       {"StreamsGroupHeartbeat.MemberEpoch", "ConsumerGroupHeartbeat.MemberEpoch", "ShareGroupHeartbeat.MemberEpoch",
        "JoinGroup.GenerationId"},
       {"MemberEpoch", "GenerationId", "GenerationIdOrMemberEpoch"},
       Scope::Member},
      {"member id",
       {"JoinGroup.MemberId", "StreamsGroupHeartbeat.MemberId", "ConsumerGroupHeartbeat.MemberId",
        "ShareGroupHeartbeat.MemberId"},
       {"MemberId"},
       Scope::Capture},
      {"producer id", {"InitProducerId.ProducerId"}, {"entity:producerId", "ProducerId"}, Scope::Capture},
      {"producer epoch", {"InitProducerId.ProducerEpoch"}, {"ProducerEpoch"}, Scope::Producer},
      {"fetch session", {"Fetch.SessionId"}, {"SessionId"}, Scope::Connection},
  };
  return rules;
}

namespace {

enum Entity : int8_t { kNone = 0, kGroup = 1, kTopicName = 2, kTopicId = 3 };

std::string raw(const Node& n) {
  switch (n.type) {
    case WireType::String: case WireType::Bytes: case WireType::VarString: case WireType::VarBytes:
      return n.is_null() ? std::string("\xff\xfe", 2) : std::string(n.str());
    case WireType::Uuid: return std::string(reinterpret_cast<const char*>(n.v.p), 16);
    default: return std::string(reinterpret_cast<const char*>(&n.v.i), sizeof n.v.i);
  }
}

// Writes `value` (as made by raw()) into node n; false when it does not fit the type.
bool assign(Frame& f, uint32_t n, const std::string& value) {
  Node& node = f.nodes[n];
  switch (node.type) {
    case WireType::String: case WireType::Bytes: case WireType::VarString: case WireType::VarBytes: {
      if (value == std::string("\xff\xfe", 2)) { node.flags |= kNull; node.aux = 0; return true; }
      std::string_view s = f.own(value);
      node.flags &= static_cast<uint8_t>(~kNull);
      node.v.p = reinterpret_cast<const uint8_t*>(s.data());
      node.aux = static_cast<uint32_t>(s.size());
      return true;
    }
    case WireType::Uuid: {
      if (value.size() != 16) return false;
      node.v.p = reinterpret_cast<const uint8_t*>(f.own(value).data());
      return true;
    }
    default:
      if (value.size() != sizeof node.v.i) return false;
      std::memcpy(&node.v.i, value.data(), sizeof node.v.i);
      return true;
  }
}

// A direct child of struct `parent` whose field has this name (or entity).
const Node* child(const Frame& f, const ProgramSet& ps, uint32_t parent, std::string_view name,
                  std::string_view entity = {}) {
  for (uint32_t c : Children(f, parent)) {
    const FieldDesc& d = ps.field(f.nodes[c].desc);
    if (d.name == name || (!entity.empty() && d.entity == entity)) return &f.nodes[c];
  }
  return nullptr;
}

// The nearest value of a field so named among `node`'s siblings and its ancestors' children.
const Node* nearest(const Frame& f, const ProgramSet& ps, uint32_t node, std::string_view name,
                    std::string_view entity = {}) {
  uint32_t p = f.nodes[node].parent;
  while (true) {
    if (f.nodes[p].type == WireType::Struct || p == 0 || p == f.body)
      if (const Node* n = child(f, ps, p, name, entity); n && n != &f.nodes[node]) return n;
    if (f.nodes[p].parent == p) return nullptr;
    p = f.nodes[p].parent;
  }
}

std::string text_of(const Node* n) {
  if (!n || n->is_null() || (n->type != WireType::String && n->type != WireType::VarString)) return {};
  return std::string(n->str());
}

}  // namespace

ReplayState::ReplayState(const ProgramSet& ps, RenameOptions renames)
    : ps_(ps), renames_(std::move(renames)), rule_cache_(ps.field_count(), -2), entity_cache_(ps.field_count(), -2) {}

int ReplayState::rule_of(uint32_t desc) const {
  int8_t& c = rule_cache_[desc];
  if (c != -2) return c;
  c = -1;
  const FieldDesc& d = ps_.field(desc);
  const auto& rules = state_rules();
  for (size_t r = 0; r < rules.size() && c < 0; ++r)
    for (std::string_view name : rules[r].fields) {
      bool hit = name.starts_with("entity:") ? d.entity == name.substr(7) : d.name == name;
      if (hit && (is_integer(d.type) || d.type == WireType::String || d.type == WireType::Uuid)) {
        c = static_cast<int8_t>(r);
        break;
      }
    }
  return c;
}

int ReplayState::entity_of(uint32_t desc) const {
  int8_t& c = entity_cache_[desc];
  if (c != -2) return c;
  const FieldDesc& d = ps_.field(desc);
  c = kNone;
  // An array of them ([]string of topicName: KIP-848's SubscribedTopicNames)
  // is too: its elements are renamed, not the array.
  const WireType t = d.type == WireType::Array ? d.elem : d.type;
  if (t == WireType::String && d.entity == "groupId") c = kGroup;
  else if (t == WireType::String && d.entity == "topicName") c = kTopicName;
  else if (t == WireType::Uuid && (d.name == "TopicId" || d.entity == "topicId")) c = kTopicId;
  return c;
}

bool ReplayState::struct_may_rewrite(uint32_t sp_idx, int depth) const {
  if (depth > 32) return true;
  const StructProgram& sp = ps_.structure(sp_idx);
  auto check = [&](uint32_t first, uint32_t count) {
    for (uint32_t i = first; i < first + count; ++i) {
      const FieldDesc& d = ps_.field(i);
      if (d.type == WireType::Records) return true;  // producer ids in batch headers
      if (rule_of(i) >= 0) return true;
      int e = entity_of(i);
      if (e == kTopicId) return true;
      if (e == kGroup && !renames_.group_prefix.empty()) return true;
      if (e == kTopicName && !renames_.topic_prefix.empty()) return true;
      if (d.name == "ClusterId" && d.type == WireType::String) return true;
      if (time_shift_ms_ != 0 && is_time(i, false)) return true;
      if (d.sub >= 0 && struct_may_rewrite(static_cast<uint32_t>(d.sub), depth + 1)) return true;
    }
    return false;
  };
  return check(sp.first_field, sp.field_count) || check(sp.first_tagged, sp.tagged_count);
}

bool ReplayState::may_rewrite(const MessageProgram& m) {
  auto it = may_rewrite_.find(&m);
  if (it != may_rewrite_.end()) return it->second;
  const bool yes = ps_.field(m.root).sub < 0 || struct_may_rewrite(static_cast<uint32_t>(ps_.field(m.root).sub), 0) ||
                   (m.api_name == "FindCoordinator" && !renames_.group_prefix.empty());
  return may_rewrite_[&m] = yes;
}

bool ReplayState::learns_from(int16_t api_key) {
  auto it = learns_from_.find(api_key);
  if (it != learns_from_.end()) return it->second;
  const MessageProgram* m = ps_.find_api(std::to_string(api_key));
  bool yes = false;
  for (const auto& r : state_rules())
    for (std::string_view src : r.learn)
      yes |= m && src.starts_with(m->api_name) && src.size() > m->api_name.size() && src[m->api_name.size()] == '.';
  return learns_from_[api_key] = yes;
}

std::string ReplayState::member_key(const Frame& request) const {
  if (!request.body) return {};
  return text_of(child(request, ps_, request.body, "GroupId", "groupId")) + '\x1f' +
         text_of(child(request, ps_, request.body, "MemberId"));
}

std::string ReplayState::scope_key(const StateRule& r, const Frame& f, uint32_t node, uint32_t connection) const {
  switch (r.scope) {
    case Scope::Member:
      return text_of(nearest(f, ps_, node, "GroupId", "groupId")) + '\x1f' + text_of(nearest(f, ps_, node, "MemberId"));
    case Scope::Producer: {
      const Node* p = nearest(f, ps_, node, "ProducerId");
      return p ? raw(*p) : std::string();
    }
    case Scope::Connection: return std::to_string(connection);
    case Scope::Capture: return {};
  }
  return {};
}

void ReplayState::learn_topics(const Frame& response, bool live) {
  if (!response.body) return;
  if (const Node* c = child(response, ps_, response.body, "ClusterId");
      c && !c->is_null() && c->type == WireType::String && c->aux > 0) {
    if (live) {
      live_cluster_id_ = std::string(c->str());
    } else {
      recorded_cluster_ids_[std::string(c->str())] = true;
    }
  }
  for (uint32_t i = response.body; i < response.nodes.size(); ++i) {
    const Node& n = response.nodes[i];
    if (n.type != WireType::Struct || n.is_null()) continue;
    const Node* id = nullptr;
    const Node* name = nullptr;
    for (uint32_t c : Children(response, i)) {
      int e = response.nodes[c].type == WireType::Array ? kNone : entity_of(response.nodes[c].desc);
      if (e == kTopicId) id = &response.nodes[c];
      else if (e == kTopicName) name = &response.nodes[c];
    }
    if (!id || !name || name->is_null()) continue;
    static const char zero[16] = {};
    if (std::memcmp(id->v.p, zero, 16) == 0) continue;
    std::string key = raw(*id);
    if (live) {
      std::string& slot = live_topic_ids_[std::string(name->str())];
      if (slot != key) {
        slot = key;
        // A different id than the capture's for this name (or an unseen name) is a substitution to make.
        bool same = false;
        for (const auto& [id, n] : recorded_topic_ids_) same |= id == key && renames_.topic_prefix + n == name->str();
        if (!same) ++differing_;
      }
    } else {
      recorded_topic_ids_[key] = std::string(name->str());
      recorded_topic_text_ids_[wire::uuid_to_string(id->v.p)] = std::string(name->str());
    }
  }
}

void ReplayState::learn(const Frame& recorded_request, const Frame& recorded, const Frame& live, uint32_t connection) {
  learn_topics(live, true);
  if (!recorded.program || !recorded.body || !live.body || !live.ok() || !recorded.ok()) return;
  const auto& rules = state_rules();
  const std::string_view api = recorded.program->api_name;
  for (size_t r = 0; r < rules.size(); ++r) {
    for (std::string_view src : rules[r].learn) {
      if (!src.starts_with(api) || src.size() <= api.size() || src[api.size()] != '.') continue;
      std::string_view field = src.substr(api.size() + 1);
      const Node* rec = child(recorded, ps_, recorded.body, field);
      const Node* got = child(live, ps_, live.body, field);
      if (!rec || !got || rec->is_null() || got->is_null()) continue;
      // An empty string is no value (a member id not assigned yet, as in an
      // answer with a retriable error): mapping it would hand one member's
      // live id to every other member's first JoinGroup.
      if ((rec->type == WireType::String || rec->type == WireType::VarString) && rec->aux == 0) continue;
      // Nor is -1, Kafka's "none" of ids and epochs (the producer id of an
      // answer with an error, the epoch of a member that left): mapped, it
      // would give a non-idempotent producer's batches (producer id -1) the
      // id one producer was handed.
      if (is_integer(rec->type) && (rec->v.i == -1 || got->v.i == -1)) continue;
      std::string key;
      switch (rules[r].scope) {
        case Scope::Member: {
          std::string member = text_of(child(recorded, ps_, recorded.body, "MemberId"));
          if (member.empty()) member = text_of(child(recorded_request, ps_, recorded_request.body, "MemberId"));
          key = text_of(child(recorded_request, ps_, recorded_request.body, "GroupId", "groupId")) + '\x1f' + member;
          break;
        }
        case Scope::Producer: {
          const Node* p = child(recorded, ps_, recorded.body, "ProducerId");
          key = p ? raw(*p) : std::string();
          break;
        }
        case Scope::Connection: key = std::to_string(connection); break;
        case Scope::Capture: break;
      }
      const std::string from = raw(*rec), to = raw(*got);
      std::string& slot = values_[std::to_string(r) + '\x1e' + key][from];
      if (slot.empty()) ++learned_;
      if (to != from && slot != to) ++differing_;
      slot = to;
    }
  }
}

bool ReplayState::map_topic_id(Frame& f, uint32_t node) {
  auto rec = recorded_topic_ids_.find(raw(f.nodes[node]));
  if (rec == recorded_topic_ids_.end()) return false;
  auto live = live_topic_ids_.find(renames_.topic_prefix + rec->second);
  if (live == live_topic_ids_.end() || live->second == rec->first) return false;
  return assign(f, node, live->second);
}

bool ReplayState::map_cluster_id(Frame& f, uint32_t node) {
  const Node& n = f.nodes[node];
  if (live_cluster_id_.empty() || n.is_null() || n.type != WireType::String || ps_.field(n.desc).name != "ClusterId")
    return false;
  if (!recorded_cluster_ids_.count(std::string(n.str())) || n.str() == live_cluster_id_) return false;
  return assign(f, node, live_cluster_id_);
}

bool ReplayState::follow(Frame& f, uint32_t node) {
  const Node& n = f.nodes[node];
  if (n.is_null() || (n.type != WireType::String && n.type != WireType::VarString) || n.aux < kFollowMinLength ||
      rule_of(n.desc) >= 0)
    return false;
  const auto& rules = state_rules();
  for (size_t r = 0; r < rules.size(); ++r) {
    if (rules[r].scope != Scope::Capture) continue;
    auto m = values_.find(std::to_string(r) + '\x1e');
    if (m == values_.end()) continue;
    auto v = m->second.find(std::string(n.str()));
    if (v != m->second.end() && v->second != v->first) return assign(f, node, v->second);
  }
  return false;
}

namespace {
// FindCoordinator names its keys without an entity type (a key is a group id
// or a transactional id by KeyType): the keys of `request` are group ids.
bool group_keys(const Frame& request, const ProgramSet& ps) {
  if (!request.program || request.program->api_name != "FindCoordinator" || !request.body) return false;
  const Node* type = child(request, ps, request.body, "KeyType");
  return !type || type->v.i == 0;  // v0 has no KeyType: a group
}
bool is_key(const Frame& f, const ProgramSet& ps, uint32_t i) {
  const Node& n = f.nodes[i];
  if (n.type != WireType::String || n.is_null() || n.aux == 0) return false;
  const std::string_view name = ps.field(n.desc).name;
  return name == "Key" || (name == "CoordinatorKeys" && (n.flags & kElement));
}
}  // namespace

int ReplayState::rename_keys(Frame& f, const Frame& request) {
  if (renames_.group_prefix.empty() || !group_keys(request, ps_)) return 0;
  int changed = 0;
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i)
    if (f.nodes[i].desc != kDescUnknownTag && is_key(f, ps_, i))
      changed += assign(f, i, renames_.group_prefix + std::string(f.nodes[i].str())) ? 1 : 0;
  return changed;
}

int ReplayState::rename(Frame& f, uint32_t node) {
  const Node& n = f.nodes[node];
  if (n.is_null()) return 0;
  int e = entity_of(n.desc);
  const std::string& prefix = e == kGroup ? renames_.group_prefix : renames_.topic_prefix;
  if (prefix.empty() || n.str().empty()) return 0;
  return assign(f, node, prefix + std::string(n.str())) ? 1 : 0;
}

bool ReplayState::substitute(Frame& f, uint32_t node, const std::string& key, int rule) {
  auto m = values_.find(std::to_string(rule) + '\x1e' + key);
  if (m == values_.end()) return false;
  auto v = m->second.find(raw(f.nodes[node]));
  if (v == m->second.end() || v->second == v->first) return false;
  return assign(f, node, v->second);
}

namespace {

// Kafka's record batch v2 header: offsets of the fields replay rewrites, and
// where the CRC-32C starts (attributes) relative to the batch.
constexpr size_t kBatchCrcAt = 17, kBatchAttributesAt = 21, kBatchProducerIdAt = 43, kBatchProducerEpochAt = 51;

// Where whole record batch `b` of records node `records` lies in that node's
// bytes, [at, end), by its BatchLength; false for a batch cut short (at a
// fetch limit) or shorter than a v2 header.
bool batch_bounds(const Frame& f, const ProgramSet& ps, uint32_t records, uint32_t b, int64_t& at, int64_t& end) {
  const Node& rn = f.nodes[records];
  const Node* length = child(f, ps, b, "BatchLength");
  // Batch nodes carry offsets into the message; the records data starts at rn.v.p.
  at = static_cast<int64_t>(f.nodes[b].offset) - (rn.v.p - f.message.data());
  if (!length || at < 0) return false;
  end = at + 12 + length->v.i;
  return end <= static_cast<int64_t>(rn.aux) && at + 61 <= end;
}

}  // namespace

bool ReplayState::is_time(uint32_t desc, bool response) const {
  // Times a message names that are record timestamps (not durations, not
  // the special values below 0: ListOffsets' -1 latest, -2 earliest, ...):
  // ListOffsets' Timestamp both ways, OffsetCommit v1's CommitTimestamp.
  const FieldDesc& d = ps_.field(desc);
  if (d.type != WireType::Int64) return false;
  return d.name == "Timestamp" || (!response && d.name == "CommitTimestamp");
}

int ReplayState::patch_batches(Frame& f, uint32_t records, const std::string& /*connection_key*/) {
  Node& rn = f.nodes[records];
  if (rn.is_null() || rn.aux == 0) return 0;
  std::string copy(reinterpret_cast<const char*>(rn.v.p), rn.aux);
  int changed = 0;
  for (uint32_t b : Children(f, records)) {
    if (f.nodes[b].desc != kDescRecordBatch) continue;
    const Node* pid = nullptr;
    const Node* epoch = nullptr;
    for (uint32_t c : Children(f, b)) {
      if (f.nodes[c].desc == kDescProducerId) pid = &f.nodes[c];
      if (f.nodes[c].desc == kDescProducerEpoch) epoch = &f.nodes[c];
    }
    int64_t at = 0, end = 0;
    if (!pid || !epoch || !batch_bounds(f, ps_, records, b, at, end)) continue;
    auto* p = reinterpret_cast<uint8_t*>(copy.data()) + at;
    uint64_t id = wire::load_be64(p + kBatchProducerIdAt);
    uint16_t ep = wire::load_be16(p + kBatchProducerEpochAt);
    bool edited = false;
    if (id != pid->v.u || ep != static_cast<uint16_t>(epoch->v.i)) {
      wire::store_be32(p + kBatchProducerIdAt, static_cast<uint32_t>(pid->v.u >> 32));
      wire::store_be32(p + kBatchProducerIdAt + 4, static_cast<uint32_t>(pid->v.u));
      wire::store_be16(p + kBatchProducerEpochAt, static_cast<uint16_t>(epoch->v.i));
      edited = true;
    }
    // The timestamps last: shift_batch recomputes the CRC over both edits.
    const std::span<uint8_t> whole(p, static_cast<size_t>(end - at));
    if (shift_batch(whole, time_shift_ms_)) edited = true;
    else if (edited) wire::store_be32(p + kBatchCrcAt, crc32c(whole.subspan(kBatchAttributesAt)));
    changed += edited ? 1 : 0;
  }
  if (changed) {
    std::string_view s = f.own(std::move(copy));
    rn.v.p = reinterpret_cast<const uint8_t*>(s.data());
  }
  return changed;
}

void ReplayState::translate_answer_batches(Frame& f, uint32_t records) const {
  const Node& rn = f.nodes[records];
  if (rn.is_null() || rn.aux == 0) return;
  for (uint32_t b : Children(f, records)) {
    int64_t at = 0, end = 0;
    if (f.nodes[b].desc != kDescRecordBatch || !batch_bounds(f, ps_, records, b, at, end)) continue;
    std::vector<uint8_t> copy(rn.v.p + at, rn.v.p + end);
    // The producer id and epoch as the target gave them (the nodes were
    // substituted already), then the timestamps; the CRC covers both.
    bool edited = false;
    for (uint32_t c : Children(f, b)) {
      const Node& x = f.nodes[c];
      if (x.desc == kDescProducerId && wire::load_be64(copy.data() + kBatchProducerIdAt) != x.v.u) {
        wire::store_be32(copy.data() + kBatchProducerIdAt, static_cast<uint32_t>(x.v.u >> 32));
        wire::store_be32(copy.data() + kBatchProducerIdAt + 4, static_cast<uint32_t>(x.v.u));
        edited = true;
      } else if (x.desc == kDescProducerEpoch && wire::load_be16(copy.data() + kBatchProducerEpochAt) != static_cast<uint16_t>(x.v.i)) {
        wire::store_be16(copy.data() + kBatchProducerEpochAt, static_cast<uint16_t>(x.v.i));
        edited = true;
      }
    }
    const bool shifted = time_shift_ms_ != 0 && shift_batch(copy, time_shift_ms_);
    if (!shifted && !edited) continue;
    if (!shifted) wire::store_be32(copy.data() + kBatchCrcAt, crc32c(std::span<const uint8_t>(copy).subspan(kBatchAttributesAt)));
    for (uint32_t c : Children(f, b)) {
      Node& x = f.nodes[c];
      if (shifted && (x.desc == kDescBaseTimestamp || x.desc == kDescMaxTimestamp) && x.v.i != kNoTimestamp) x.v.i += time_shift_ms_;
      else if (x.desc == kDescCrc) x.v.u = wire::load_be32(copy.data() + kBatchCrcAt);
    }
  }
}

int ReplayState::rewrite_request(Frame& f, uint32_t connection) {
  if (!f.body) return 0;
  // Keys first, from the values as recorded: a substitution must not change
  // the key of a field after it.
  struct Edit { uint32_t node; int rule; std::string key; };
  std::vector<Edit> edits;
  std::vector<uint32_t> dirty_records;
  int changed = 0;
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Records) {
      // Only the batch headers; records themselves carry nothing replay rewrites.
      for (uint32_t b : Children(f, i))
        for (uint32_t c : Children(f, b)) {
          int r = f.nodes[c].desc == kDescProducerId || f.nodes[c].desc == kDescProducerEpoch ? rule_of(f.nodes[c].desc) : -1;
          if (r >= 0) edits.push_back({c, r, scope_key(state_rules()[r], f, c, connection)});
        }
      dirty_records.push_back(i);
      i = n.end - 1;
      continue;
    }
    if (n.desc == kDescUnknownTag) continue;
    if (time_shift_ms_ != 0 && is_time(n.desc, false)) {
      if (n.v.i >= 0) f.nodes[i].v.i += time_shift_ms_;  // the replay's clock: not counted as a substitution
      continue;
    }
    int r = rule_of(n.desc);
    if (r >= 0) edits.push_back({i, r, scope_key(state_rules()[r], f, i, connection)});
  }
  for (const Edit& e : edits) changed += substitute(f, e.node, e.key, e.rule) ? 1 : 0;
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Records) { i = n.end - 1; continue; }
    if (n.desc == kDescUnknownTag) continue;
    int e = n.type == WireType::Array ? kNone : entity_of(n.desc);
    if (e == kTopicId) changed += map_topic_id(f, i) ? 1 : 0;
    else if (e != kNone) changed += rename(f, i);
    else changed += map_cluster_id(f, i) || follow(f, i) ? 1 : 0;
  }
  for (uint32_t r : dirty_records) patch_batches(f, r, {});
  return changed + rename_keys(f, f);
}

void ReplayState::translate_response(Frame& f, const Frame& recorded_request, uint32_t connection) {
  if (!f.body) return;
  struct Edit { uint32_t node; int rule; std::string key; };
  std::vector<Edit> edits;
  const std::string request_member = member_key(recorded_request);
  std::vector<uint32_t> records;
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Records) {
      // Batch headers: the producer's id and epoch as the target knows them.
      for (uint32_t b : Children(f, i))
        for (uint32_t c : Children(f, b)) {
          int r = f.nodes[c].desc == kDescProducerId || f.nodes[c].desc == kDescProducerEpoch ? rule_of(f.nodes[c].desc) : -1;
          if (r >= 0) edits.push_back({c, r, scope_key(state_rules()[r], f, c, connection)});
        }
      records.push_back(i);
      i = n.end - 1;
      continue;
    }
    if (n.desc == kDescUnknownTag) continue;
    if (time_shift_ms_ != 0 && is_time(n.desc, true)) {
      if (n.v.i >= 0) f.nodes[i].v.i += time_shift_ms_;
      continue;
    }
    int r = rule_of(n.desc);
    if (r < 0) continue;
    const StateRule& rule = state_rules()[r];
    std::string key;
    if (rule.scope == Scope::Member && n.parent == f.body) {
      // A top-level epoch answers the request's member (whose id the response may have just assigned).
      const Node* member = child(f, ps_, f.body, "MemberId");
      std::string m = text_of(member);
      key = m.empty() ? request_member
                      : text_of(child(recorded_request, ps_, recorded_request.body, "GroupId", "groupId")) + '\x1f' + m;
    } else {
      key = scope_key(rule, f, i, connection);
      if (rule.scope == Scope::Member && key.front() == '\x1f')
        key = text_of(child(recorded_request, ps_, recorded_request.body, "GroupId", "groupId")) + key;
    }
    edits.push_back({i, r, std::move(key)});
  }
  for (const Edit& e : edits) substitute(f, e.node, e.key, e.rule);
  for (uint32_t r : records) translate_answer_batches(f, r);
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Records) { i = n.end - 1; continue; }
    if (n.desc == kDescUnknownTag) continue;
    int e = n.type == WireType::Array ? kNone : entity_of(n.desc);
    if (e == kTopicId) map_topic_id(f, i);
    else if (e != kNone) rename(f, i);
    else if (!map_cluster_id(f, i)) follow(f, i);
  }
  rename_keys(f, recorded_request);
}

}  // namespace kwire::replay
