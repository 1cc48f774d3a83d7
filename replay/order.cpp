#include "replay/order.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

std::string_view order_rule_name(OrderRule r) {
  switch (r) {
    case OrderRule::WriteBeforeRead: return "a write before a read";
    case OrderRule::TxnEndBeforeRead: return "a transaction's end before a read_committed read";
    case OrderRule::ReadBeforeTruncation: return "a read before a truncation";
  }
  return "?";
}

namespace {

constexpr int16_t kProduce = 0, kFetch = 1, kListOffsets = 2, kDeleteRecords = 21, kEndTxn = 26;
// How far back a request looks for requests still unanswered when it was sent:
// longer than any request stays in flight (a client's request.timeout.ms is 30 s).
constexpr int64_t kLookBackUs = 120'000'000;

using Partition = std::string;  // topic name (or "id:" and the uuid's text) + '\x1f' + partition

const Node* child_named(const Frame& f, const ProgramSet& ps, uint32_t parent, std::initializer_list<std::string_view> names) {
  for (uint32_t c : Children(f, parent)) {
    const std::string_view n = ps.field(f.nodes[c].desc).name;
    for (std::string_view want : names)
      if (n == want) return &f.nodes[c];
  }
  return nullptr;
}

// Topic ids of the capture, by its answers (Metadata, CreateTopics, ...).
class TopicNames {
 public:
  void learn(const Frame& f, const ProgramSet& ps) {
    for (uint32_t i = f.body ? f.body + 1 : f.nodes.size(); i < f.nodes.size(); ++i) {
      const Node& n = f.nodes[i];
      if (n.type != WireType::Struct) continue;
      const Node* name = child_named(f, ps, i, {"Name", "Topic", "TopicName"});
      const Node* id = child_named(f, ps, i, {"TopicId"});
      if (name && id && name->type == WireType::String && !name->is_null() && id->type == WireType::Uuid)
        names_[wire::uuid_to_string(id->v.p)] = std::string(name->str());
    }
  }
  std::string topic(const Frame& f, const ProgramSet& ps, uint32_t element) const {
    if (const Node* name = child_named(f, ps, element, {"Name", "Topic", "TopicName"});
        name && name->type == WireType::String && !name->is_null())
      return std::string(name->str());
    if (const Node* id = child_named(f, ps, element, {"TopicId"}); id && id->type == WireType::Uuid) {
      const std::string text = wire::uuid_to_string(id->v.p);
      auto it = names_.find(text);
      return it == names_.end() ? "id:" + text : it->second;
    }
    return {};
  }

 private:
  std::unordered_map<std::string, std::string> names_;
};

// The partitions a request names: each struct element with a partition
// number, under the topic element above it. Fetch's ForgottenTopicsData
// (partitions as plain numbers) goes to `forgotten`.
void partitions_of(const Frame& f, const ProgramSet& ps, const TopicNames& topics, std::set<Partition>& named,
                   std::set<Partition>* forgotten = nullptr) {
  for (uint32_t i = f.body ? f.body + 1 : f.nodes.size(); i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Records) { i = n.end - 1; continue; }
    if (n.type != WireType::Struct || !(n.flags & kElement)) continue;
    const std::string_view array = ps.field(f.nodes[n.parent].desc).name;
    if (array == "ForgottenTopicsData") {
      const std::string topic = topics.topic(f, ps, i);
      if (const Node* parts = child_named(f, ps, i, {"Partitions"}); forgotten && parts && parts->type == WireType::Array)
        for (uint32_t p : Children(f, static_cast<uint32_t>(parts - f.nodes.data())))
          forgotten->insert(topic + '\x1f' + std::to_string(f.nodes[p].v.i));
      i = n.end - 1;
      continue;
    }
    const Node* index = child_named(f, ps, i, {"Index", "Partition", "PartitionIndex"});
    if (!index || !is_integer(index->type)) continue;
    // The element's array sits in the topic's element.
    const uint32_t topic_el = f.nodes[n.parent].parent;
    const std::string topic = topics.topic(f, ps, topic_el);
    if (!topic.empty()) named.insert(topic + '\x1f' + std::to_string(index->v.i));
  }
}

struct Request {
  uint32_t s = 0, i = 0;  // rec.sessions[s].exchanges[i]
  const Exchange* e = nullptr;
};
bool sent_before(const Exchange& a, const Exchange& b) {
  return a.request_us != b.request_us ? a.request_us < b.request_us : a.frame < b.frame;
}

}  // namespace

OrderWaits cross_session_order(const ProgramSet& ps, const Recording& rec) {
  OrderWaits waits(rec.sessions.size());
  for (size_t s = 0; s < rec.sessions.size(); ++s) waits[s].resize(rec.sessions[s].exchanges.size());
  FrameDecoder dec(ps);
  dec.set_nested(false);
  Frame f;
  TopicNames topics;
  for (const auto& s : rec.sessions)
    for (const auto& e : s.exchanges)
      if (!e.response.empty() && (e.api_key == 3 || e.api_key == 19 || e.api_key == 75)) {  // Metadata, CreateTopics, DescribeTopicPartitions
        dec.decode_response(e.response, e.api_key, e.api_version, f);
        topics.learn(f, ps);
      }

  // Writes, reads and truncations by partition; transaction ends; all in the order sent.
  std::map<Partition, std::vector<Request>> writes, reads;
  std::vector<Request> txn_ends;
  struct Read { Request r; std::set<Partition> parts; bool committed = false; };
  std::vector<Read> all_reads;
  std::vector<std::pair<Request, std::set<Partition>>> truncations;
  for (uint32_t s = 0; s < rec.sessions.size(); ++s) {
    const RecordedSession& session = rec.sessions[s];
    if (!session.broker_traffic.empty()) continue;
    std::set<Partition> fetch_session;  // the partitions of the connection's fetch session
    for (uint32_t i = 0; i < session.exchanges.size(); ++i) {
      const Exchange& e = session.exchanges[i];
      const int16_t k = e.api_key;
      if (e.malformed || (k != kProduce && k != kFetch && k != kListOffsets && k != kDeleteRecords && k != kEndTxn)) continue;
      const Request req{s, i, &e};
      if (k == kEndTxn) { txn_ends.push_back(req); continue; }
      dec.decode_request(e.request, f);
      if (!f.ok() || !f.body) continue;
      std::set<Partition> named, forgotten;
      partitions_of(f, ps, topics, named, &forgotten);
      if (k == kProduce) {
        for (const auto& p : named) writes[p].push_back(req);
      } else if (k == kDeleteRecords) {
        truncations.emplace_back(req, std::move(named));
      } else {
        Read r{req, {}, false};
        if (k == kFetch) {
          const Node* epoch = child_named(f, ps, f.body, {"SessionEpoch"});
          const Node* isolation = child_named(f, ps, f.body, {"IsolationLevel"});
          r.committed = isolation && isolation->v.i == 1;
          if (!epoch || epoch->v.i <= 0) fetch_session = named;  // a full fetch (or no session) names them all
          else {
            for (const auto& p : forgotten) fetch_session.erase(p);
            fetch_session.insert(named.begin(), named.end());
          }
          r.parts = fetch_session;
        } else {
          r.parts = std::move(named);
        }
        for (const auto& p : r.parts) reads[p].push_back(req);
        all_reads.push_back(std::move(r));
      }
    }
  }
  auto by_time = [](const Request& a, const Request& b) { return sent_before(*a.e, *b.e); };
  for (auto* m : {&writes, &reads})
    for (auto& [p, v] : *m) std::sort(v.begin(), v.end(), by_time);
  std::sort(txn_ends.begin(), txn_ends.end(), by_time);

  // `later` waits for each of `earlier` (sorted by time) that another session
  // sent before it and had not had answered when `later` was sent.
  auto wait_for = [&](const Request& later, const std::vector<Request>& earlier, OrderRule rule, std::set<uint64_t>& seen) {
    auto end = std::lower_bound(earlier.begin(), earlier.end(), later, by_time);
    for (auto it = end; it != earlier.begin();) {
      --it;
      const Exchange& w = *it->e;
      if (w.request_us < later.e->request_us - kLookBackUs) break;
      if (it->s == later.s || w.response_seq == kNoResponse || w.response_seq < later.e->after) continue;
      if (!seen.insert(w.response_seq).second) continue;
      waits[later.s][later.i].push_back({w.response_seq, rec.sessions[it->s].id, it->i, rule});
    }
  };
  for (const Read& r : all_reads) {
    std::set<uint64_t> seen;
    for (const auto& p : r.parts)
      if (auto w = writes.find(p); w != writes.end()) wait_for(r.r, w->second, OrderRule::WriteBeforeRead, seen);
    if (r.committed) wait_for(r.r, txn_ends, OrderRule::TxnEndBeforeRead, seen);
  }
  for (const auto& [t, parts] : truncations) {
    std::set<uint64_t> seen;
    for (const auto& p : parts)
      if (auto rd = reads.find(p); rd != reads.end()) wait_for(t, rd->second, OrderRule::ReadBeforeTruncation, seen);
  }
  return waits;
}

OrderCounts count_waits(const OrderWaits& w) {
  OrderCounts c;
  for (const auto& s : w)
    for (const auto& e : s)
      for (const auto& x : e) {
        switch (x.rule) {
          case OrderRule::WriteBeforeRead: ++c.write_before_read; break;
          case OrderRule::TxnEndBeforeRead: ++c.txn_end_before_read; break;
          case OrderRule::ReadBeforeTruncation: ++c.read_before_truncation; break;
        }
      }
  return c;
}

}  // namespace kwire::replay
