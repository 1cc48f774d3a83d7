#include "replay/compare_shape.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>

#include "dissector/output/output.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

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

std::string json_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t k = 0; k < v.size(); ++k) out += (k ? "," : "") + v[k];
  return out + "]";
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

bool unordered_values(std::string_view api, const std::vector<std::string_view>& segs) {
  for (const auto& u : unordered_arrays())
    if (u.pattern.matches_exactly(api, segs)) return true;
  return false;
}

bool same_leaf(const Frame& a, uint32_t i, const Frame& b, uint32_t j) {
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

bool same_subtree(const Frame& a, uint32_t i, const Frame& b, uint32_t j) {
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

void subtree_json(const ProgramSet& ps, const Frame& f, uint32_t i, std::string& out, std::string_view api,
                  std::vector<std::string_view>* segs) {
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

std::string canonical_json(const ProgramSet& ps, const Frame& f, uint32_t i, std::string_view api) {
  std::vector<std::string_view> segs{"body", ps.field(f.nodes[i].desc).json_name};
  std::string out;
  subtree_json(ps, f, i, out, api, &segs);
  return out;
}

std::string element_identity(const ProgramSet& ps, const Frame& f, uint32_t element) {
  static const std::string_view names[] = {"PartitionIndex", "Index", "PartitionId", "Partition", "TopicId",
                                           "Name", "Topic", "TopicName", "GroupId", "MemberId", "SubtopologyId"};
  std::string k, fallback;
  for (uint32_t c : Children(f, element)) {
    const FieldDesc& d = ps.field(f.nodes[c].desc);
    if (f.nodes[c].desc == kDescUnknownTag) continue;
    if (d.flags & kMapKey) k += json_value(ps, f, c) + ',';
    else if (std::find(std::begin(names), std::end(names), d.name) != std::end(names))
      fallback += json_value(ps, f, c) + ',';
  }
  return k.empty() ? fallback : k;
}

std::vector<int64_t> pair_elements(const std::vector<std::string>& rj, const std::vector<std::string>& lj,
                                   const std::vector<std::string>& rid, const std::vector<std::string>& lid,
                                   std::vector<bool>& taken) {
  std::vector<int64_t> pair(rj.size(), -1);
  taken.assign(lj.size(), false);
  std::multimap<std::string, size_t> exact;
  for (size_t i = 0; i < lj.size(); ++i) exact.emplace(lj[i], i);
  for (size_t i = 0; i < rj.size(); ++i) {
    auto it = exact.find(rj[i]);
    if (it == exact.end()) continue;
    pair[i] = static_cast<int64_t>(it->second);
    taken[it->second] = true;
    exact.erase(it);
  }
  std::multimap<std::string, size_t> by_id;
  for (size_t i = 0; i < lj.size(); ++i) if (!taken[i]) by_id.emplace(lid[i], i);
  for (size_t i = 0; i < rj.size(); ++i) {
    if (pair[i] >= 0) continue;
    auto it = by_id.find(rid[i]);
    if (it == by_id.end() || it->first.empty()) continue;
    pair[i] = static_cast<int64_t>(it->second);
    taken[it->second] = true;
    by_id.erase(it);
  }
  std::vector<size_t> rest;
  for (size_t i = 0; i < lj.size(); ++i) if (!taken[i]) rest.push_back(i);
  size_t next = 0;
  for (size_t i = 0; i < rj.size(); ++i) {
    if (pair[i] >= 0 || rid[i].size()) continue;  // identity-less: by position
    if (next < rest.size()) { pair[i] = static_cast<int64_t>(rest[next]); taken[rest[next]] = true; ++next; }
  }
  return pair;
}

bool ClusterSizes::replica_count(int64_t r, int64_t l) const {
  const int64_t rb = recorded, tb = target;
  if (rb <= 0 || tb <= 0 || rb == tb || r == l) return false;
  return l == std::min(r, tb) || (r == rb && l == tb);
}

bool ClusterSizes::config_cap(int64_t r, int64_t l) const {
  const int64_t rb = recorded, tb = target;
  if (replica_count(r, l)) return true;
  if (rb <= 0 || tb <= 0) return false;
  return (rb < tb && r == rb && l > r && l <= tb) || (tb < rb && l == tb && r > l && r <= rb);
}

bool ClusterSizes::broker_list(size_t r, size_t l) const {
  return r != l && recorded > 0 && target > 0 && r == static_cast<size_t>(recorded) && l == static_cast<size_t>(target);
}

bool ClusterSizes::quorum(size_t r, size_t l) const { return r != l && recorded > 0 && target > 0 && recorded != target; }

std::string ClusterSizes::replicas_why() const {
  return std::string(kShapeRule) + "a partition has as many replicas as the target holds (at most " +
         std::to_string(target) + "; a broker default fills it)";
}

std::string ClusterSizes::brokers_why() const { return std::string(kShapeRule) + "a broker list names every broker"; }

std::string ClusterSizes::replica_config_why(std::string_view name) const {
  return std::string(kShapeRule) + std::string(name) + " counts replicas, of which the target holds at most " +
         std::to_string(target);
}

std::string ClusterSizes::quorum_why(std::string_view name, size_t r, size_t l) const {
  return std::string(kShapeRule) + std::string(name) + " lists " + std::to_string(l) +
         (l == 1 ? " controller" : " controllers") + ", the capture's " + std::to_string(r);
}

bool replica_config(std::string_view name) {
  return name.ends_with(".replication.factor") || name.ends_with(".min.isr") || name == "min.insync.replicas";
}

bool parse_count(std::string_view s, int64_t& v) { return std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc{}; }

}  // namespace kwire::replay
