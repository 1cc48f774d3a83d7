#include "replay/concurrency.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "dissector/protocol/decoder.hpp"
#include "replay/share.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

namespace {

bool is_partition_field(std::string_view name) {
  return name == "PartitionIndex" || name == "Index" || name == "Partition" || name == "PartitionId";
}

// The topic a struct element names: a topic-name string, a TopicId, or a
// DescribeConfigs resource of type TOPIC (2).
std::string element_topic(const ProgramSet& ps, const Frame& f, uint32_t el, const TopicNameOf& topic_name) {
  if (f.nodes[el].type != WireType::Struct || f.nodes[el].is_null()) return {};
  std::string by_id, resource;
  bool topic_resource = false;
  for (uint32_t c : Children(f, el)) {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag || n.is_null()) continue;
    const FieldDesc& d = ps.field(n.desc);
    if (d.type == WireType::String && d.entity == "topicName") return std::string(n.str());
    if (n.type == WireType::Uuid && (d.name == "TopicId" || d.entity == "topicId")) {
      static const uint8_t zero[16] = {};
      if (std::equal(n.v.p, n.v.p + 16, zero)) continue;
      std::string id(reinterpret_cast<const char*>(n.v.p), 16);
      by_id = topic_name ? topic_name(id) : std::string();
      if (by_id.empty()) by_id = "topic id " + wire::uuid_to_string(n.v.p);
    }
    if (d.name == "ResourceName" && n.type == WireType::String) resource = std::string(n.str());
    if (d.name == "ResourceType" && is_integer(n.type)) topic_resource = n.v.i == 2;
  }
  if (!by_id.empty()) return by_id;
  return topic_resource ? resource : std::string();
}

int32_t element_partition(const ProgramSet& ps, const Frame& f, uint32_t el) {
  if (f.nodes[el].type != WireType::Struct || f.nodes[el].is_null()) return -1;
  for (uint32_t c : Children(f, el)) {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag || n.type != WireType::Int32) continue;
    if (is_partition_field(ps.field(n.desc).name)) return static_cast<int32_t>(n.v.i);
  }
  return -1;
}

uint32_t child_named(const ProgramSet& ps, const Frame& f, uint32_t parent, std::string_view json_name) {
  for (uint32_t c : Children(f, parent))
    if (f.nodes[c].desc != kDescUnknownTag && ps.field(f.nodes[c].desc).json_name == json_name) return c;
  return 0;
}

uint32_t child_at(const Frame& f, uint32_t parent, size_t k) {
  size_t i = 0;
  for (uint32_t c : Children(f, parent))
    if (i++ == k) return c;
  return 0;
}

bool race_field(const std::vector<RaceField>& table, std::string_view api, const std::string& path) {
  std::vector<std::string> parts;
  std::string cur;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') { i = path.find(']', i); if (i == std::string::npos) break; continue; }
    if (path[i] == '.') { parts.push_back(cur); cur.clear(); continue; }
    cur += path[i];
  }
  parts.push_back(cur);
  std::vector<std::string_view> segs(parts.begin(), parts.end());
  for (const auto& r : table)
    if (r.pattern.matches(api, segs)) return true;
  return false;
}

constexpr int64_t kRebalanceInProgress = 27;

// The group a request names (its GroupId), empty when none.
std::string request_group(const ProgramSet& ps, const Frame& f) {
  if (!f.body) return {};
  for (uint32_t c : Children(f, f.body)) {
    const Node& n = f.nodes[c];
    if (n.desc != kDescUnknownTag && !n.is_null() && n.type == WireType::String && ps.field(n.desc).entity == "groupId")
      return std::string(n.str());
  }
  return {};
}

double ms(int64_t us) { return static_cast<double>(us) / 1000.0; }

bool share_api(std::string_view api) { return api == "ShareFetch" || api == "ShareAcknowledge"; }

}  // namespace

const std::vector<RaceField>& race_fields() {
  static const std::vector<RaceField> v = pattern_table<RaceField>({
      {"Produce:body.responses.partitionResponses.baseOffset",
       "where the batch landed in the partition: after the batches of concurrent producers that came first"},
      {"ListOffsets:body.topics.partitions.offset",
       "a log end (or max-timestamp) offset: counts the concurrent batches that came first"},
      {"ListOffsets:body.topics.partitions.timestamp",
       "the timestamp of the max-timestamp record: depends on the concurrent batches that came first"},
  });
  return v;
}

const std::vector<RaceField>& group_race_fields() {
  static const std::vector<RaceField> v = pattern_table<RaceField>({
      {"SyncGroup:body.errorCode", "REBALANCE_IN_PROGRESS or not: whether another member's join came first"},
      {"SyncGroup:body.protocolType", "set only when the member got its assignment"},
      {"SyncGroup:body.protocolName", "set only when the member got its assignment"},
      {"SyncGroup:body.assignment", "the member's assignment, or none when a rebalance began first"},
      {"Heartbeat:body.errorCode", "REBALANCE_IN_PROGRESS or not: whether another member's join came first"},
      {"OffsetCommit:body.topics.partitions.errorCode",
       "REBALANCE_IN_PROGRESS or not: whether another member's join came first"},
  });
  return v;
}

const std::vector<RaceField>& share_race_fields() {
  static const std::vector<RaceField> v = pattern_table<RaceField>({
      {"ShareFetch:body.responses.partitions.acquiredRecords",
       "the records this member acquired: those no other member's fetch acquired first"},
      {"ShareFetch:body.responses.partitions.records", "the batches of the records this member acquired"},
      {"ShareFetch:body.responses.partitions", "a partition with records for this member, or none yet"},
      {"ShareFetch:body.responses", "a topic with records for this member, or none yet"},
      {"ShareAcknowledge:body.responses", "a topic whose acknowledgements this member had to send, or none"},
  });
  return v;
}

const std::vector<RaceField>& share_member_race_fields() {
  static const std::vector<RaceField> v = pattern_table<RaceField>({
      {"ShareGroupDescribe:body.groups.members", "the members: whether another member's join or leave came first"},
      {"ShareGroupDescribe:body.groups.groupState", "Empty or Stable: whether a member's join or leave came first"},
  });
  return v;
}

const std::vector<std::string_view>& group_changers() {
  static const std::vector<std::string_view> v = {"JoinGroup", "LeaveGroup"};
  return v;
}

const std::vector<std::string_view>& partition_writers() {
  static const std::vector<std::string_view> v = {"Produce"};
  return v;
}

std::vector<TopicPartition> request_partitions(const ProgramSet& ps, const Frame& f, const TopicNameOf& topic_name) {
  std::vector<TopicPartition> out;
  if (!f.body) return out;
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type != WireType::Struct || !(n.flags & kElement)) continue;
    const int32_t p = element_partition(ps, f, i);
    if (p < 0) continue;
    // The nearest enclosing element that names a topic.
    for (uint32_t up = n.parent; up && up != f.body; up = f.nodes[up].parent) {
      std::string t = element_topic(ps, f, up, topic_name);
      if (t.empty()) continue;
      TopicPartition tp{t, p};
      if (std::find(out.begin(), out.end(), tp) == out.end()) out.push_back(std::move(tp));
      break;
    }
  }
  return out;
}

bool topic_partition_at(const ProgramSet& ps, const Frame& recorded, const Frame* live, const std::string& path,
                        const TopicNameOf& topic_name, TopicPartition& out) {
  out = {};
  const Frame* side[2] = {&recorded, live};
  uint32_t pos[2] = {recorded.body, live ? live->body : 0};
  bool known[2] = {recorded.body != 0, live && live->body};
  if (!path.starts_with("body")) return false;
  size_t i = 4;
  auto look = [&](int s) {
    const std::string t = element_topic(ps, *side[s], pos[s], topic_name);
    if (!t.empty()) { out.topic = t; out.partition = -1; }
    const int32_t p = element_partition(ps, *side[s], pos[s]);
    if (p >= 0 && !out.topic.empty()) out.partition = p;
  };
  while (i < path.size()) {
    if (path[i] == '.') {
      size_t end = path.find_first_of(".[", i + 1);
      if (end == std::string::npos) end = path.size();
      const std::string_view name(path.data() + i + 1, end - i - 1);
      for (int s = 0; s < 2; ++s)
        if (known[s]) {
          pos[s] = child_named(ps, *side[s], pos[s], name);
          known[s] = pos[s] != 0;
        }
      i = end;
    } else if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos) return false;
      const bool live_index = path[i + 1] == '+';
      const size_t k = std::strtoull(path.c_str() + i + 1 + (live_index ? 1 : 0), nullptr, 10);
      const int s = live_index ? 1 : 0;
      known[1 - s] = false;
      if (!known[s]) break;   // an element of the other side under an unpaired one: the topic so far
      pos[s] = child_at(*side[s], pos[s], k);
      known[s] = pos[s] != 0;
      if (known[s]) look(s);
      i = close + 1;
    } else {
      return false;
    }
    if (!known[0] && !known[1]) break;
  }
  return !out.topic.empty();
}

void classify_races(const ProgramSet& ps, const Recording& rec, const TopicNameOf& topic_name, ReplayResult& result) {
  FrameDecoder dec(ps);
  dec.set_nested(false);
  std::map<uint32_t, const RecordedSession*> sessions;
  int64_t t0 = INT64_MAX;
  for (const auto& s : rec.sessions) {
    sessions[s.id] = &s;
    for (const auto& e : s.exchanges) t0 = std::min(t0, e.request_us);
  }
  auto exchange_of = [&](const ExchangeResult& r) -> const Exchange* {
    auto it = sessions.find(r.session);
    if (it == sessions.end() || r.index >= it->second->exchanges.size()) return nullptr;
    return &it->second->exchanges[r.index];
  };
  auto listed = [](const std::vector<std::string_view>& apis, const std::string& api) {
    return std::find(apis.begin(), apis.end(), api) != apis.end();
  };
  // What the target got of the requests that change a shared resource: writes
  // by topic-partition, joins and leaves by group.
  std::map<TopicPartition, std::vector<const ExchangeResult*>> writes;
  std::map<std::string, std::vector<const ExchangeResult*>> group_changes;
  // Share groups: their members' ShareFetches, and the heartbeats that join
  // (member epoch 0) or leave (-1).
  std::map<std::string, std::vector<const ExchangeResult*>> share_fetches, share_joins;
  std::map<const ExchangeResult*, std::string> member_of;   // a ShareFetch's member (one member fetches from each leader)
  std::map<uint32_t, std::set<std::string>> share_topics;   // the topics a session's ShareFetches named
  Frame f;
  for (const auto& r : result.exchanges) {
    if (r.live_sent_us < 0) continue;
    if (r.api_name == "ShareFetch" || r.api_name == "ShareGroupHeartbeat") {
      const Exchange* e = exchange_of(r);
      if (!e || e->malformed) continue;
      dec.decode_request(e->request, f);
      const std::string g = request_group(ps, f);
      if (g.empty()) continue;
      if (r.api_name == "ShareFetch") {
        share_fetches[g].push_back(&r);
        for (auto& tp : request_partitions(ps, f, topic_name)) share_topics[r.session].insert(tp.topic);
        if (const Node* m = f.body ? find_field(f, ps, f.body, "MemberId") : nullptr; m && !m->is_null())
          member_of[&r] = std::string(m->str());
      } else if (const Node* epoch = f.body ? find_field(f, ps, f.body, "MemberEpoch") : nullptr;
                 epoch && (epoch->v.i == 0 || epoch->v.i == -1)) {
        share_joins[g].push_back(&r);
      }
      continue;
    }
    const bool writer = listed(partition_writers(), r.api_name), changer = listed(group_changers(), r.api_name);
    if (!writer && !changer) continue;
    const Exchange* e = exchange_of(r);
    if (!e || e->malformed) continue;
    dec.decode_request(e->request, f);
    if (writer)
      for (auto& tp : request_partitions(ps, f, topic_name)) writes[tp].push_back(&r);
    if (changer)
      if (std::string g = request_group(ps, f); !g.empty()) group_changes[g].push_back(&r);
  }
  if (writes.empty() && group_changes.empty() && share_fetches.empty() && share_joins.empty()) return;

  // The nearest request of another session among `others` that raced with r
  // (exchange x): none when every one of them is ordered by the capture and
  // reached the target in that order.
  auto racing = [&](const ExchangeResult& r, const Exchange* x, const std::vector<const ExchangeResult*>& others,
                    const std::string& resource, RaceEvidence& found) {
    const int64_t x_end = x->response_us >= 0 ? x->response_us : x->request_us;
    int64_t best_gap = INT64_MAX;
    for (const ExchangeResult* o : others) {
      if (o->session == r.session) continue;
      const Exchange* y = exchange_of(*o);
      if (!y) continue;
      const int64_t y_end = y->response_us >= 0 ? y->response_us : y->request_us;
      RaceEvidence ev;
      ev.order_not_fixed = y->request_us <= x_end && x->request_us <= y_end;
      if (r.live_sent_us >= 0 && o->live_sent_us >= 0 && y->request_us != x->request_us)
        ev.live_order_differs = (y->request_us < x->request_us) != (o->live_sent_us < r.live_sent_us);
      if (!ev.order_not_fixed && !ev.live_order_differs) continue;
      const int64_t gap = std::llabs(y->request_us - x->request_us);
      if (gap >= best_gap) continue;
      best_gap = gap;
      ev.session = o->session;
      ev.frame = o->frame;
      ev.api = o->api_name + " v" + std::to_string(o->api_version);
      ev.partition = resource;
      ev.recorded_ms = ms(x->request_us - t0);
      ev.recorded_response_ms = x->response_us >= 0 ? ms(x->response_us - t0) : -1;
      ev.other_recorded_ms = ms(y->request_us - t0);
      ev.other_recorded_response_ms = y->response_us >= 0 ? ms(y->response_us - t0) : -1;
      ev.live_ms = r.live_sent_us >= 0 ? ms(r.live_sent_us) : -1;
      ev.other_live_ms = o->live_sent_us >= 0 ? ms(o->live_sent_us) : -1;
      found = ev;
    }
    return best_gap != INT64_MAX;
  };

  for (auto& r : result.exchanges) {
    if (r.outcome != Outcome::Regression) continue;
    const Exchange* x = exchange_of(r);
    if (!x || x->response.empty()) continue;
    dec.decode_response(x->response, x->api_key, x->api_version, f);
    if (!f.ok()) continue;
    std::vector<RaceEvidence> evidence;
    // On partitions: every difference a race field under a partition that a
    // write of another session raced with.
    std::set<TopicPartition> shared;
    bool on_partitions = true, any = false;
    // On a group: every difference a group race field, one of them an error
    // code that is REBALANCE_IN_PROGRESS on one side only.
    bool on_group = true, rebalance = false;
    bool on_share = share_api(r.api_name), on_members = r.api_name == "ShareGroupDescribe";
    for (const auto& d : r.differences) {
      if (d.ignored) continue;
      any = true;
      if (on_share && (!race_field(share_race_fields(), r.api_name, d.path) || json_names_error(d.recorded) ||
                       json_names_error(d.replayed) || d.path.ends_with("rrorCode")))
        on_share = false;
      if (on_members && !race_field(share_member_race_fields(), r.api_name, d.path)) on_members = false;
      TopicPartition tp;
      if (on_partitions && (!race_field(race_fields(), r.api_name, d.path) ||
                            !topic_partition_at(ps, f, nullptr, d.path, topic_name, tp) || tp.partition < 0))
        on_partitions = false;
      else if (on_partitions)
        shared.insert(tp);
      if (!race_field(group_race_fields(), r.api_name, d.path)) on_group = false;
      const std::string rebalancing = std::to_string(kRebalanceInProgress);
      if (d.path.ends_with("errorCode") && (d.recorded == rebalancing) != (d.replayed == rebalancing)) rebalance = true;
    }
    if (!any) continue;
    if (on_partitions) {
      for (const auto& tp : shared) {
        auto w = writes.find(tp);
        RaceEvidence ev;
        if (w == writes.end() || !racing(r, x, w->second, tp.str(), ev)) break;
        evidence.push_back(std::move(ev));
      }
      if (evidence.size() != shared.size()) evidence.clear();
    }
    if (evidence.empty() && on_group && rebalance) {
      dec.decode_request(x->request, f);
      const std::string g = f.ok() ? request_group(ps, f) : std::string();
      auto c = group_changes.find(g);
      RaceEvidence ev;
      if (!g.empty() && c != group_changes.end() && racing(r, x, c->second, "group " + g, ev)) evidence.push_back(std::move(ev));
    }
    if (evidence.empty() && on_share) {
      // The topics (and partitions) the differences lie under, read off the
      // recorded answer (still in f). A difference in what only the target
      // answered ("[+i]") has no place there: it lies under one of the topics
      // the session fetches from (a share session names them once, not in
      // every fetch).
      std::set<TopicPartition> under;
      for (const auto& d : r.differences) {
        TopicPartition tp;
        if (d.ignored) continue;
        if (topic_partition_at(ps, f, nullptr, d.path, topic_name, tp))
          under.insert(tp);
        else if (auto st = share_topics.find(r.session); st != share_topics.end())
          for (const auto& t : st->second) under.insert(TopicPartition{t, -1});
      }
      dec.decode_request(x->request, f);
      const std::string g = f.ok() ? request_group(ps, f) : std::string();
      const Node* self = f.ok() && f.body ? find_field(f, ps, f.body, "MemberId") : nullptr;
      std::vector<const ExchangeResult*> others;   // other members' fetches
      if (auto m = share_fetches.find(g); !g.empty() && m != share_fetches.end())
        for (const ExchangeResult* o : m->second)
          if (auto it = member_of.find(o); !self || self->is_null() || it == member_of.end() || it->second != self->str())
            others.push_back(o);
      RaceEvidence ev;
      if (!others.empty() && racing(r, x, others, "share group " + g, ev)) {
        evidence.push_back(std::move(ev));
      } else {
        // Records a long-polled fetch got from a write that came while it
        // waited: on the target the wait may end first.
        for (const auto& [tp, list] : writes) {
          const bool named = std::any_of(under.begin(), under.end(), [&](const TopicPartition& u) {
            return u.topic == tp.topic && (u.partition < 0 || u.partition == tp.partition);
          });
          if (named && racing(r, x, list, tp.str(), ev)) {
            evidence.push_back(std::move(ev));
            break;
          }
        }
      }
    }
    if (evidence.empty() && on_members) {
      // ShareGroupDescribe names its groups in an array: the one raced on is
      // any of them with a join or leave of another session.
      dec.decode_request(x->request, f);
      auto names = [&](const std::string& g) {
        for (uint32_t i = f.body; f.ok() && f.body && i < f.nodes.size(); ++i) {
          const Node& n = f.nodes[i];
          if (n.type == WireType::String && !n.is_null() && n.desc != kDescUnknownTag &&
              ps.field(n.desc).entity == "groupId" && n.str() == g)
            return true;
        }
        return false;
      };
      for (const auto& [g, joins] : share_joins) {
        RaceEvidence ev;
        if (names(g) && racing(r, x, joins, "share group " + g, ev)) {
          evidence.push_back(std::move(ev));
          break;
        }
      }
    }
    if (evidence.empty()) continue;
    r.outcome = Outcome::Race;
    for (auto& d : r.differences)
      if (!d.ignored) d.rule = "race";
    std::string note;
    for (const auto& ev : evidence) {
      char line[320];
      snprintf(line, sizeof line,
               "%son %s with session %u frame %llu %s: recorded requests at %.3f and %.3f ms%s, live sent at %.3f and %.3f ms",
               note.empty() ? "" : "; ", ev.partition.c_str(), ev.session, static_cast<unsigned long long>(ev.frame),
               ev.api.c_str(), ev.recorded_ms, ev.other_recorded_ms,
               ev.order_not_fixed ? " (order not fixed by the capture)" : "", ev.live_ms, ev.other_live_ms);
      note += line;
      if (ev.live_order_differs) note += " (the other order)";
    }
    r.note = note;
    r.races = std::move(evidence);
  }
}

const std::vector<LaggingRead>& lagging_reads() {
  static const std::vector<LaggingRead> v = {
      {"Metadata", "topics and partitions as the answering broker's metadata cache has them"},
      {"DescribeTopicPartitions", "topics and partitions as the answering broker's metadata cache has them"},
      {"ListOffsets", "a partition's leader must know it"},
      {"DescribeConfigs", "a topic's configs once the broker knows the topic"},
  };
  return v;
}

const std::vector<std::string_view>& admin_writes() {
  static const std::vector<std::string_view> v = {"CreateTopics", "CreatePartitions", "DeleteTopics"};
  return v;
}

bool is_lagging_read(std::string_view api) {
  for (const auto& r : lagging_reads())
    if (r.api == api) return true;
  return false;
}

bool is_admin_write(std::string_view api) {
  return std::find(admin_writes().begin(), admin_writes().end(), api) != admin_writes().end();
}

std::set<std::string> written_topics(const ProgramSet& ps, const Frame& request, const Frame& response) {
  std::set<std::string> out;
  for (const Frame* f : {&request, &response}) {
    if (!f->body) continue;
    for (uint32_t i = f->body + 1; i < f->nodes.size(); ++i) {
      const Node& n = f->nodes[i];
      if (n.desc == kDescUnknownTag || n.is_null() || n.type != WireType::String) continue;
      if (ps.field(n.desc).entity == "topicName") out.insert(std::string(n.str()));
    }
  }
  return out;
}

bool lag_explains(const ProgramSet& ps, const Frame& recorded, const Frame& live, const std::vector<Difference>& diffs,
                  const std::set<std::string>& pending, const TopicNameOf& topic_name) {
  bool any = false;
  for (const auto& d : diffs) {
    if (d.ignored) continue;
    any = true;
    TopicPartition tp;
    if (!topic_partition_at(ps, recorded, &live, d.path, topic_name, tp) || !pending.count(tp.topic)) return false;
  }
  return any;
}

}  // namespace kwire::replay
