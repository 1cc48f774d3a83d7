#include "replay/split.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "replay/routing.hpp"

namespace kwire::replay {

bool splittable(std::string_view api) {
  return api == "Produce" || api == "ListOffsets" || api == "OffsetForLeaderEpoch" || api == "DeleteRecords";
}

namespace {

constexpr uint32_t kItself = UINT32_MAX;

// A subtree of some frame, and subtrees to add to array nodes as they are copied.
struct Source {
  const Frame* f;
  uint32_t node;
};
using Extras = std::map<std::pair<const Frame*, uint32_t>, std::vector<Source>>;

// Appends to `dst` a copy of the subtree at `root` of `src` without the
// subtrees `skip` marks (nodes of `src`), with the subtrees `extras` names
// after the children of an array; element counts and subtree ends follow.
void copy(const Frame& src, uint32_t root, NodeTape& dst, uint32_t parent, const std::vector<bool>* skip,
          const Extras* extras) {
  const auto at = static_cast<uint32_t>(dst.size());
  dst.push_back(src.nodes[root]);
  dst[at].parent = parent == kItself ? at : parent;
  uint32_t elements = 0;
  for (uint32_t c = root + 1; c < src.nodes[root].end; c = src.nodes[c].end) {
    if (skip && (*skip)[c]) continue;
    copy(src, c, dst, at, skip, extras);
    ++elements;
  }
  if (extras)
    if (auto it = extras->find({&src, root}); it != extras->end())
      for (const Source& s : it->second) {
        copy(*s.f, s.node, dst, at, nullptr, extras);
        ++elements;
      }
  if (src.nodes[root].type == WireType::Array && !src.nodes[root].is_null()) dst[at].aux = elements;
  dst[at].end = static_cast<uint32_t>(dst.size());
}

bool encode_copy(const Frame& src, const ProgramSet& ps, const std::vector<bool>* skip, const Extras* extras,
                 std::vector<uint8_t>& out, std::string& error) {
  Frame f;
  f.program = src.program;
  f.api_key = src.api_key;
  f.api_version = src.api_version;
  f.direction = src.direction;
  f.correlation_id = src.correlation_id;
  f.header_version = src.header_version;
  f.message = src.message;
  copy(src, 0, f.nodes, kItself, skip, extras);
  f.body = static_cast<uint32_t>(f.nodes.size());
  copy(src, src.body, f.nodes, kItself, skip, extras);
  return FrameEncoder(ps).encode(f, out, error);
}

// A topic's element of an answer: its name or id (the key two answers share),
// and its array of partitions.
bool topic_element(const Frame& f, const ProgramSet& ps, uint32_t el, std::string& key, uint32_t& partitions) {
  key.clear();
  partitions = 0;
  for (uint32_t c : Children(f, el)) {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag) continue;
    const FieldDesc& d = ps.field(n.desc);
    if (n.type == WireType::String && d.entity == "topicName" && !n.is_null() && !n.str().empty()) key = "name " + std::string(n.str());
    else if (n.type == WireType::Uuid && d.name == "TopicId" && key.empty()) key = "id " + std::string(reinterpret_cast<const char*>(n.v.p), 16);
    else if (n.type == WireType::Array && !n.is_null() && !partitions) partitions = c;
  }
  return !key.empty() && partitions;
}

// The body's array of topics.
uint32_t topics_of(const Frame& f, const ProgramSet& ps) {
  for (uint32_t c : Children(f, f.body)) {
    const Node& n = f.nodes[c];
    if (n.type != WireType::Array || n.is_null() || n.desc == kDescUnknownTag) continue;
    std::string key;
    uint32_t parts = 0;
    bool all = n.aux > 0;
    for (uint32_t el : Children(f, c)) all = all && f.nodes[el].type == WireType::Struct && topic_element(f, ps, el, key, parts);
    if (all) return c;
  }
  return 0;
}

// The key entity of a coordinator's role.
std::string_view key_entity(Role role) {
  switch (role) {
    case Role::GroupCoordinator: case Role::ShareCoordinator: return "groupId";
    case Role::TxnCoordinator: return "transactionalId";
    default: return {};
  }
}

// The key an element of a body's array holds: the element itself (a string of
// the entity), or a string child of the entity (a struct's). Empty if none.
std::string_view element_key(const Frame& f, const ProgramSet& ps, uint32_t el, std::string_view entity) {
  auto is_key = [&](const Node& n) {
    return n.desc != kDescUnknownTag && n.type == WireType::String && !n.is_null() && ps.field(n.desc).entity == entity;
  };
  const Node& n = f.nodes[el];
  if (is_key(n)) return n.str();
  if (n.type != WireType::Struct) return {};
  for (uint32_t c : Children(f, el))
    if (is_key(f.nodes[c])) return f.nodes[c].str();
  return {};
}

// The body's array whose every element holds a key of `entity`, or 0.
uint32_t keys_of(const Frame& f, const ProgramSet& ps, std::string_view entity) {
  if (entity.empty() || !f.body) return 0;
  for (uint32_t c : Children(f, f.body)) {
    const Node& n = f.nodes[c];
    if (n.type != WireType::Array || n.is_null() || n.desc == kDescUnknownTag || n.aux == 0) continue;
    bool all = true;
    for (uint32_t el : Children(f, c)) all = all && !element_key(f, ps, el, entity).empty();
    if (all) return c;
  }
  return 0;
}

// An answer's array of per-key results (by group or transactional id), or 0.
uint32_t key_results_of(const Frame& f, const ProgramSet& ps) {
  for (std::string_view entity : {"groupId", "transactionalId"})
    if (uint32_t a = keys_of(f, ps, entity)) return a;
  return 0;
}

}  // namespace

std::vector<KeySlot> key_slots(const Frame& request, const ProgramSet& ps, Role role) {
  std::vector<KeySlot> out;
  const std::string_view entity = key_entity(role);
  const uint32_t keys = keys_of(request, ps, entity);
  if (!keys) return out;
  for (uint32_t el : Children(request, keys)) out.push_back({std::string(element_key(request, ps, el, entity)), el});
  return out;
}

bool keep_keys(const Frame& request, const ProgramSet& ps, const std::vector<uint32_t>& keep, std::vector<uint8_t>& out,
               std::string& error) {
  if (!request.body || !request.ok()) { error = "the request did not decode"; return false; }
  const Role role = role_of(request, ps);
  const uint32_t keys = keys_of(request, ps, key_entity(role));
  if (!keys) { error = "the request names no keys of its coordinator"; return false; }
  std::vector<bool> skip(request.nodes.size(), false);
  for (uint32_t el : Children(request, keys)) skip[el] = std::find(keep.begin(), keep.end(), el) == keep.end();
  return encode_copy(request, ps, &skip, nullptr, out, error);
}

bool join_key_answers(const std::vector<const Frame*>& answers, const ProgramSet& ps, std::vector<uint8_t>& out,
                      std::string& error) {
  if (answers.empty()) { error = "no answers"; return false; }
  for (const Frame* a : answers)
    if (!a->body || !a->ok()) { error = "an answer did not decode"; return false; }
  const Frame& base = *answers.front();
  const uint32_t base_keys = key_results_of(base, ps);
  if (!base_keys) { error = "the answer has no array of per-key results"; return false; }
  Extras extras;
  for (size_t k = 1; k < answers.size(); ++k) {
    const Frame& a = *answers[k];
    const uint32_t keys = key_results_of(a, ps);
    if (!keys || a.nodes[keys].desc != base.nodes[base_keys].desc) { error = "an answer has no array of per-key results"; return false; }
    for (uint32_t el : Children(a, keys)) extras[{&base, base_keys}].push_back({&a, el});
  }
  return encode_copy(base, ps, nullptr, &extras, out, error);
}

bool keep_partitions(const Frame& request, const ProgramSet& ps, const std::vector<uint32_t>& keep, std::vector<uint8_t>& out,
                     std::string& error) {
  if (!request.body || !request.ok()) { error = "the request did not decode"; return false; }
  std::vector<bool> skip(request.nodes.size(), false);
  std::map<uint32_t, bool> topic_kept;
  for (const PartitionSlot& s : partition_slots(request, ps)) {
    const bool kept = std::find(keep.begin(), keep.end(), s.element) != keep.end();
    skip[s.element] = !kept;
    topic_kept[s.topic] = topic_kept[s.topic] || kept;
  }
  for (const auto& [topic, kept] : topic_kept) skip[topic] = !kept;
  return encode_copy(request, ps, &skip, nullptr, out, error);
}

bool join_answers(const std::vector<const Frame*>& answers, const ProgramSet& ps, std::vector<uint8_t>& out,
                  std::string& error) {
  if (answers.empty()) { error = "no answers"; return false; }
  for (const Frame* a : answers)
    if (!a->body || !a->ok()) { error = "an answer did not decode"; return false; }
  const Frame& base = *answers.front();
  const uint32_t base_topics = topics_of(base, ps);
  if (!base_topics) { error = "the answer has no array of topics"; return false; }
  std::map<std::string, Source> owner;   // topic -> the partitions array its partitions join
  std::string key;
  uint32_t parts = 0;
  for (uint32_t el : Children(base, base_topics))
    if (topic_element(base, ps, el, key, parts)) owner.emplace(key, Source{&base, parts});
  Extras extras;
  for (size_t k = 1; k < answers.size(); ++k) {
    const Frame& a = *answers[k];
    const uint32_t topics = topics_of(a, ps);
    if (!topics) { error = "an answer has no array of topics"; return false; }
    for (uint32_t el : Children(a, topics)) {
      if (!topic_element(a, ps, el, key, parts)) continue;
      auto it = owner.find(key);
      if (it == owner.end()) {
        extras[{&base, base_topics}].push_back({&a, el});
        owner.emplace(key, Source{&a, parts});
        continue;
      }
      for (uint32_t p : Children(a, parts)) extras[{it->second.f, it->second.node}].push_back({&a, p});
    }
  }
  return encode_copy(base, ps, nullptr, &extras, out, error);
}

}  // namespace kwire::replay
