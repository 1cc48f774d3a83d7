#include "replay/share.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace kwire::replay {

namespace {

void expand(const std::vector<OffsetRange>& ranges, std::vector<int64_t>& out) {
  for (const OffsetRange& r : ranges)
    for (int64_t o = r.first; o <= r.last; ++o) out.push_back(o);
}

// A direct child of `parent` whose spec field is so named, or 0.
uint32_t child(const Frame& f, const ProgramSet& ps, uint32_t parent, std::string_view name) {
  for (uint32_t c : Children(f, parent))
    if (f.nodes[c].desc != kDescUnknownTag && ps.field(f.nodes[c].desc).name == name) return c;
  return 0;
}

std::string raw_uuid(const Frame& f, uint32_t n) {
  return n && f.nodes[n].type == WireType::Uuid ? std::string(reinterpret_cast<const char*>(f.nodes[n].v.p), 16)
                                                : std::string();
}

std::vector<AckBatch> read_batches(const Frame& f, const ProgramSet& ps, uint32_t array) {
  std::vector<AckBatch> out;
  for (uint32_t el : Children(f, array)) {
    AckBatch b;
    const uint32_t first = child(f, ps, el, "FirstOffset"), last = child(f, ps, el, "LastOffset"),
                   types = child(f, ps, el, "AcknowledgeTypes");
    if (!first || !last || !types) continue;
    b.first = f.nodes[first].v.i;
    b.last = f.nodes[last].v.i;
    for (uint32_t t : Children(f, types)) b.types.push_back(static_cast<int8_t>(f.nodes[t].v.i));
    out.push_back(std::move(b));
  }
  return out;
}

// What to change while copying a request: acknowledgement arrays to replace,
// and partitions or topics to add (with their acknowledgements) at the end of
// an array of partitions or topics.
struct NewPartition {
  int32_t index = -1;
  std::vector<AckBatch> batches;
};
struct NewTopic {
  std::string id;
  std::vector<NewPartition> partitions;
};
struct Edits {
  std::map<uint32_t, std::vector<AckBatch>> replace;       // AcknowledgementBatches node -> batches
  std::map<uint32_t, std::vector<NewPartition>> partitions; // Partitions node -> partitions to add
  std::map<uint32_t, std::vector<NewTopic>> topics;         // Topics node -> topics to add
};

constexpr uint32_t kSelf = UINT32_MAX;

// Builds nodes from the specs' descriptors, as the decoder would have made them.
class Build {
 public:
  Build(const ProgramSet& ps, Frame& f, NodeTape& t) : ps_(ps), f_(f), t_(t) {}

  uint32_t open(uint32_t desc, uint32_t parent, WireType type, bool element) {
    const auto at = static_cast<uint32_t>(t_.size());
    Node n;
    n.desc = desc;
    n.parent = parent == kSelf ? at : parent;
    n.type = type;
    n.flags = element ? kElement : 0;
    t_.push_back(n);
    return at;
  }
  void close(uint32_t at, uint32_t count = 0) {
    if (t_[at].type == WireType::Array) t_[at].aux = count;
    t_[at].end = static_cast<uint32_t>(t_.size());
  }
  // A field of a struct with a value: an integer, or for a uuid its 16 bytes.
  void value(uint32_t desc, uint32_t parent, int64_t v, std::string_view uuid = {}) {
    const FieldDesc& d = ps_.field(desc);
    const uint32_t at = open(desc, parent, d.type, false);
    if (d.type == WireType::Uuid) {
      const std::string_view own = f_.own(std::string(uuid.size() == 16 ? uuid : std::string_view("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16)));
      t_[at].v.p = reinterpret_cast<const uint8_t*>(own.data());
    } else if (d.type == WireType::String || d.type == WireType::Bytes) {
      t_[at].flags |= kNull;
    } else if (d.type == WireType::Array) {
      close(at, 0);
      return;
    } else {
      t_[at].v.i = v;
    }
    close(at);
  }

  void batches(uint32_t array_desc, uint32_t parent, const std::vector<AckBatch>& bs) {
    const uint32_t arr = open(array_desc, parent, WireType::Array, false);
    const StructProgram& sp = ps_.structure(static_cast<uint32_t>(ps_.field(array_desc).sub));
    for (const AckBatch& b : bs) {
      const uint32_t el = open(array_desc, arr, WireType::Struct, true);
      for (uint32_t i = sp.first_field; i < sp.first_field + sp.field_count; ++i) {
        const std::string_view name = ps_.field(i).name;
        if (name == "AcknowledgeTypes") {
          const uint32_t types = open(i, el, WireType::Array, false);
          for (int8_t ty : b.types) {
            const uint32_t v = open(i, types, ps_.field(i).elem, true);
            t_[v].v.i = ty;
            close(v);
          }
          close(types, static_cast<uint32_t>(b.types.size()));
        } else {
          value(i, el, name == "FirstOffset" ? b.first : name == "LastOffset" ? b.last : 0);
        }
      }
      close(el);
    }
    close(arr, static_cast<uint32_t>(bs.size()));
  }

  void partition(uint32_t array_desc, uint32_t parent, const NewPartition& p) {
    const uint32_t el = open(array_desc, parent, WireType::Struct, true);
    const StructProgram& sp = ps_.structure(static_cast<uint32_t>(ps_.field(array_desc).sub));
    for (uint32_t i = sp.first_field; i < sp.first_field + sp.field_count; ++i) {
      const std::string_view name = ps_.field(i).name;
      if (name == "AcknowledgementBatches") batches(i, el, p.batches);
      else value(i, el, name == "PartitionIndex" ? p.index : 0);
    }
    close(el);
  }

  void topic(uint32_t array_desc, uint32_t parent, const NewTopic& t) {
    const uint32_t el = open(array_desc, parent, WireType::Struct, true);
    const StructProgram& sp = ps_.structure(static_cast<uint32_t>(ps_.field(array_desc).sub));
    for (uint32_t i = sp.first_field; i < sp.first_field + sp.field_count; ++i) {
      if (ps_.field(i).name == "Partitions") {
        const uint32_t arr = open(i, el, WireType::Array, false);
        for (const NewPartition& p : t.partitions) partition(i, arr, p);
        close(arr, static_cast<uint32_t>(t.partitions.size()));
      } else {
        value(i, el, 0, t.id);
      }
    }
    close(el);
  }

  // A copy of the subtree at `root` of the frame, with the edits.
  void copy(uint32_t root, uint32_t parent, const Edits& ed) {
    if (auto it = ed.replace.find(root); it != ed.replace.end()) {
      batches(f_.nodes[root].desc, parent, it->second);
      return;
    }
    const auto at = static_cast<uint32_t>(t_.size());
    t_.push_back(f_.nodes[root]);
    t_[at].parent = parent == kSelf ? at : parent;
    uint32_t count = 0;
    for (uint32_t c : Children(f_, root)) {
      copy(c, at, ed);
      ++count;
    }
    if (auto it = ed.partitions.find(root); it != ed.partitions.end())
      for (const NewPartition& p : it->second) partition(f_.nodes[root].desc, at, p), ++count;
    if (auto it = ed.topics.find(root); it != ed.topics.end())
      for (const NewTopic& t : it->second) topic(f_.nodes[root].desc, at, t), ++count;
    if (t_[at].type == WireType::Array && !t_[at].is_null()) t_[at].aux = count;
    t_[at].end = static_cast<uint32_t>(t_.size());
  }

 private:
  const ProgramSet& ps_;
  Frame& f_;
  NodeTape& t_;
};

}  // namespace

void OffsetSet::add(int64_t first, int64_t last) {
  if (first > last) return;
  auto it = r_.upper_bound(first);
  if (it != r_.begin() && std::prev(it)->second + 1 >= first) {
    --it;
    first = it->first;
    last = std::max(last, it->second);
    it = r_.erase(it);
  }
  while (it != r_.end() && it->first <= last + 1) {
    last = std::max(last, it->second);
    it = r_.erase(it);
  }
  r_.emplace(first, last);
}

std::vector<OffsetRange> OffsetSet::minus(const OffsetSet& other) const {
  std::vector<OffsetRange> out;
  for (auto [first, last] : r_) {
    int64_t at = first;
    auto o = other.r_.upper_bound(first);
    if (o != other.r_.begin()) --o;
    for (; o != other.r_.end() && o->first <= last && at <= last; ++o) {
      if (o->second < at) continue;
      if (o->first > at) out.push_back({at, o->first - 1});
      at = o->second + 1;
    }
    if (at <= last) out.push_back({at, last});
  }
  return out;
}

std::vector<ShareLedger::Lack> ShareLedger::never_acquired() const {
  std::vector<Lack> out;
  for (const auto& [where, u] : acquired_)
    if (auto lack = u.recorded.minus(u.live); !lack.empty()) {
      OffsetSet l;
      for (const auto& o : lack) l.add(o.first, o.last);
      const bool in_last = l.minus(u.last).empty();
      out.push_back({where, std::move(lack), u.exchange, in_last});
    }
  return out;
}

void ShareLedger::acquired(const ShareKey& k, const std::vector<OffsetRange>& recorded, const std::vector<OffsetRange>& live,
                           const std::string& group, size_t exchange) {
  if (!group.empty()) {
    Union& u = acquired_[{group, k.topic_id, k.partition}];
    for (const OffsetRange& r : recorded) u.recorded.add(r.first, r.last);
    for (const OffsetRange& r : live) u.live.add(r.first, r.last);
    if (exchange != SIZE_MAX && !recorded.empty()) {
      u.exchange = exchange;
      u.last = OffsetSet();
      for (const OffsetRange& r : recorded) u.last.add(r.first, r.last);
    }
  }
  if (recorded.empty() && live.empty() && !held_.count(k)) return;
  Held& h = held_[k];
  expand(recorded, h.recorded);
  expand(live, h.live);
}

const std::vector<int64_t>* ShareLedger::held(const ShareKey& k, bool live) const {
  auto it = held_.find(k);
  return it == held_.end() ? nullptr : live ? &it->second.live : &it->second.recorded;
}

std::vector<std::pair<ShareKey, std::vector<AckBatch>>> ShareLedger::settle(const std::string& member) {
  std::vector<std::pair<ShareKey, std::vector<AckBatch>>> out;
  for (auto it = held_.lower_bound(ShareKey{member, {}, INT32_MIN}); it != held_.end() && it->first.member == member; ++it) {
    Held& h = it->second;
    if (!h.recorded.empty() || h.live.empty()) continue;
    auto t = last_type_.find(member);
    const int8_t type = t == last_type_.end() || t->second == kAckRenew ? kAckAccept : t->second;
    std::vector<std::pair<int64_t, int8_t>> acks;
    for (int64_t o : h.live) acks.emplace_back(o, type);
    h.live.clear();
    out.emplace_back(it->first, ack_batches(std::move(acks)));
  }
  return out;
}

std::vector<AckBatch> ack_batches(std::vector<std::pair<int64_t, int8_t>> acks) {
  std::stable_sort(acks.begin(), acks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<AckBatch> out;
  for (const auto& [offset, type] : acks) {
    if (!out.empty() && out.back().last + 1 == offset && out.back().types.front() == type) {
      out.back().last = offset;
      continue;
    }
    if (!out.empty() && out.back().last >= offset) continue;   // the same offset twice: the first holds
    out.push_back({offset, offset, {type}});
  }
  return out;
}

std::vector<AckBatch> ShareLedger::translate(const ShareKey& k, const std::vector<AckBatch>& recorded) {
  auto it = held_.find(k);
  if (it == held_.end()) return recorded;
  Held& h = it->second;
  // Recorded position -> the type it was acknowledged with.
  std::map<size_t, int8_t> by_position;
  std::vector<std::pair<int64_t, int8_t>> out;
  for (const AckBatch& b : recorded) {
    for (int64_t o = b.first; o <= b.last; ++o) {
      const size_t i = static_cast<size_t>(o - b.first);
      const int8_t type = b.types.size() == 1 ? b.types.front() : i < b.types.size() ? b.types[i] : b.types.back();
      auto at = std::find(h.recorded.begin(), h.recorded.end(), o);
      if (at == h.recorded.end()) {
        out.emplace_back(o, type);   // not known held: as recorded
        continue;
      }
      by_position.emplace(static_cast<size_t>(at - h.recorded.begin()), type);
    }
  }
  if (!by_position.empty()) last_type_[k.member] = by_position.rbegin()->second;
  std::set<size_t> live_done;
  for (const auto& [pos, type] : by_position)
    if (pos < h.live.size()) {
      out.emplace_back(h.live[pos], type);
      if (type != kAckRenew) live_done.insert(pos);
    }
  // Everything the recorded member held is acknowledged: so is everything
  // the live one holds beyond it, as the last recorded record was.
  if (!by_position.empty() && by_position.size() == h.recorded.size()) {
    const int8_t last = by_position.rbegin()->second;
    for (size_t pos = h.recorded.size(); pos < h.live.size(); ++pos) {
      out.emplace_back(h.live[pos], last);
      if (last != kAckRenew) live_done.insert(pos);
    }
  }
  std::vector<int64_t> rec_left, live_left;
  for (size_t i = 0; i < h.recorded.size(); ++i) {
    auto b = by_position.find(i);
    if (b == by_position.end() || b->second == kAckRenew) rec_left.push_back(h.recorded[i]);
  }
  for (size_t i = 0; i < h.live.size(); ++i)
    if (!live_done.count(i)) live_left.push_back(h.live[i]);
  h.recorded = std::move(rec_left);
  h.live = std::move(live_left);
  return ack_batches(std::move(out));
}

int translate_acknowledgements(Frame& request, const ProgramSet& ps, ShareLedger& ledger) {
  if (!request.ok() || !request.body) return 0;
  const Node* member_node = find_field(request, ps, request.body, "MemberId");
  const uint32_t topics = child(request, ps, request.body, "Topics");
  if (!member_node || member_node->is_null() || !topics) return 0;
  const std::string member(member_node->str());
  Edits ed;
  // Where each topic's and partition's element is, to add to them.
  std::map<std::string, uint32_t> topic_parts;
  std::map<std::pair<std::string, int32_t>, uint32_t> partition_batches;
  for (uint32_t t : Children(request, topics)) {
    const std::string id = raw_uuid(request, child(request, ps, t, "TopicId"));
    const uint32_t parts = child(request, ps, t, "Partitions");
    if (id.empty() || !parts) continue;
    topic_parts.emplace(id, parts);
    for (uint32_t p : Children(request, parts)) {
      const uint32_t index = child(request, ps, p, "PartitionIndex"), batches = child(request, ps, p, "AcknowledgementBatches");
      if (!index || !batches || request.nodes[batches].is_null()) continue;
      const auto partition = static_cast<int32_t>(request.nodes[index].v.i);
      partition_batches.emplace(std::make_pair(id, partition), batches);
      const ShareKey key{member, id, partition};
      if (request.nodes[batches].aux == 0 || !ledger.knows(key)) continue;
      const std::vector<AckBatch> recorded = read_batches(request, ps, batches);
      std::vector<AckBatch> live = ledger.translate(key, recorded);
      if (live != recorded) ed.replace.emplace(batches, std::move(live));
    }
  }
  // What the live member holds where the recorded one holds nothing: the
  // recorded client was done with every record it had, and so is this one.
  for (auto& [key, batches] : ledger.settle(member)) {
    auto pb = partition_batches.find({key.topic_id, key.partition});
    if (pb != partition_batches.end()) {
      auto& into = ed.replace[pb->second];
      if (into.empty() && request.nodes[pb->second].aux > 0) into = read_batches(request, ps, pb->second);
      std::vector<std::pair<int64_t, int8_t>> all;
      for (const auto* list : {&into, &batches})
        for (const AckBatch& b : *list)
          for (int64_t o = b.first; o <= b.last; ++o) all.emplace_back(o, b.types.size() == 1 ? b.types[0] : b.types[o - b.first]);
      into = ack_batches(std::move(all));
    } else if (auto tp = topic_parts.find(key.topic_id); tp != topic_parts.end()) {
      ed.partitions[tp->second].push_back({key.partition, std::move(batches)});
    } else {
      auto& added = ed.topics[topics];
      auto t = std::find_if(added.begin(), added.end(), [&](const NewTopic& n) { return n.id == key.topic_id; });
      if (t == added.end()) t = added.insert(added.end(), NewTopic{key.topic_id, {}});
      t->partitions.push_back({key.partition, std::move(batches)});
    }
  }
  const size_t changed = ed.replace.size() + ed.partitions.size() + ed.topics.size();
  if (!changed) return 0;
  NodeTape tape;
  Build b(ps, request, tape);
  b.copy(0, kSelf, ed);
  const auto body = static_cast<uint32_t>(tape.size());
  b.copy(request.body, kSelf, ed);
  request.nodes = std::move(tape);
  request.body = body;
  return static_cast<int>(changed);
}

void learn_acquired(const Frame& request, const Frame& recorded, const Frame& live, const ProgramSet& ps, ShareLedger& ledger,
                    size_t exchange) {
  if (!request.ok() || !request.body) return;
  const Node* member = find_field(request, ps, request.body, "MemberId");
  if (!member || member->is_null()) return;
  const Node* group = find_field(request, ps, request.body, "GroupId");
  const std::string group_id = group && !group->is_null() ? std::string(group->str()) : std::string();
  using Acquired = std::map<std::pair<std::string, int32_t>, std::vector<OffsetRange>>;
  auto read = [&](const Frame& f) {
    Acquired out;
    const uint32_t responses = f.ok() && f.body ? child(f, ps, f.body, "Responses") : 0;
    if (!responses) return out;
    for (uint32_t t : Children(f, responses)) {
      const std::string id = raw_uuid(f, child(f, ps, t, "TopicId"));
      const uint32_t parts = child(f, ps, t, "Partitions");
      if (id.empty() || !parts) continue;
      for (uint32_t p : Children(f, parts)) {
        const uint32_t index = child(f, ps, p, "PartitionIndex"), acquired = child(f, ps, p, "AcquiredRecords");
        if (!index) continue;
        auto& ranges = out[{id, static_cast<int32_t>(f.nodes[index].v.i)}];
        if (!acquired) continue;
        for (uint32_t a : Children(f, acquired)) {
          const uint32_t first = child(f, ps, a, "FirstOffset"), last = child(f, ps, a, "LastOffset");
          if (first && last && f.nodes[first].v.i <= f.nodes[last].v.i)
            ranges.push_back({f.nodes[first].v.i, f.nodes[last].v.i});
        }
      }
    }
    return out;
  };
  const Acquired rec = read(recorded), now = read(live);
  std::set<std::pair<std::string, int32_t>> keys;
  for (const auto& [k, v] : rec) keys.insert(k);
  for (const auto& [k, v] : now) keys.insert(k);
  static const std::vector<OffsetRange> kNone;
  for (const auto& k : keys) {
    auto r = rec.find(k), l = now.find(k);
    ledger.acquired({std::string(member->str()), k.first, k.second}, r == rec.end() ? kNone : r->second,
                    l == now.end() ? kNone : l->second, group_id, exchange);
  }
}

}  // namespace kwire::replay

namespace kwire::replay {

bool json_names_error(const std::string& json) {
  for (size_t at = json.find("rrorCode\":"); at != std::string::npos; at = json.find("rrorCode\":", at + 1)) {
    const size_t v = at + 10;
    if (v < json.size() && json[v] != '0') return true;
  }
  return false;
}

void rewritten_acknowledgements(int16_t api_key, std::vector<Difference>& diffs) {
  const std::string absent = "\"(absent)\"";
  for (auto& d : diffs) {
    const bool live_only = d.recorded == absent, recorded_only = d.replayed == absent && api_key == kShareAcknowledgeKey;
    const std::string& present = live_only ? d.replayed : d.recorded;
    const std::string path = plain_path(d.path);
    if (d.ignored || (!live_only && !recorded_only) || present.find("rrorCode\":") == std::string::npos ||
        json_names_error(present) || (path != "body.responses" && path != "body.responses.partitions"))
      continue;
    d.ignored = true;
    d.rule = live_only ? "acknowledgements of records this member acquired on the target (the capture's member had none there)"
                       : "acknowledgements of records the capture's member acquired and this member did not";
  }
}

void settled_start_offsets(const Frame& recorded, const Frame& live, const ProgramSet& ps, std::vector<Difference>& diffs) {
  // The element of body.groups[g].topics[t].partitions[p] on one side.
  auto partition = [&](const Frame& f, const std::string& path) -> uint32_t {
    uint32_t at = f.ok() ? f.body : 0;
    size_t i = 0;
    for (std::string_view name : {"Groups", "Topics", "Partitions"}) {
      const size_t open = path.find('[', i);
      if (!at || open == std::string::npos || path[open + 1] == '+') return 0;
      const uint32_t array = child(f, ps, at, name);
      if (!array) return 0;
      size_t k = std::strtoull(path.c_str() + open + 1, nullptr, 10);
      at = 0;
      for (uint32_t el : Children(f, array))
        if (k-- == 0) { at = el; break; }
      i = path.find(']', open);
      if (i == std::string::npos) return 0;
    }
    return at;
  };
  auto lag = [&](const Frame& f, uint32_t el) -> int64_t {
    const uint32_t n = el ? child(f, ps, el, "Lag") : 0;
    return n ? f.nodes[n].v.i : -2;
  };
  for (Difference& d : diffs) {
    if (d.ignored || !d.path.ends_with("].startOffset")) continue;
    if (lag(recorded, partition(recorded, d.path)) != 0 || lag(live, partition(live, d.path)) != 0) continue;
    d.ignored = true;
    d.rule = "every record acknowledged on both sides (lag 0): the start offset follows how the acknowledgements were batched";
  }
}

}  // namespace kwire::replay
