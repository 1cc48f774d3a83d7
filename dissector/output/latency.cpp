#include "dissector/output/latency.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "dissector/output/output.hpp"

namespace kwire {

namespace {

constexpr int kSubBits = 13;                   // 8,192 buckets per power of two
constexpr int kExactBelow = 1 << kSubBits;    // µs: exact below 8.192 ms

uint64_t frame_of(const FrameContext& ctx) { return ctx.packet.number ? ctx.packet.number : ctx.number; }

// "12.345" (milliseconds with microsecond digits).
void append_ms(TextBuffer& out, int64_t micros) {
  char b[32];
  snprintf(b, sizeof b, "%lld.%03lld", static_cast<long long>(micros / 1000), static_cast<long long>(micros % 1000));
  out += b;
}

void pad(TextBuffer& out, std::string_view s, size_t width, bool right = false) {
  if (right) out.append(width > s.size() ? width - s.size() : 0, ' ');
  out += s;
  if (!right) out.append(width > s.size() ? width - s.size() : 0, ' ');
}

std::string ms(int64_t micros) {
  TextBuffer b;
  append_ms(b, micros);
  return std::string(b.data(), b.size());
}

}  // namespace

uint32_t LatencyHistogram::bucket(int64_t v) {
  if (v < kExactBelow) return static_cast<uint32_t>(v);
  const int e = 63 - __builtin_clzll(static_cast<uint64_t>(v));  // >= kSubBits
  const uint32_t sub = static_cast<uint32_t>(v >> (e - kSubBits)) & ((1u << kSubBits) - 1);
  return kExactBelow + static_cast<uint32_t>(e - kSubBits) * (1u << kSubBits) + sub;
}

int64_t LatencyHistogram::lower_bound(uint32_t b) {
  if (b < kExactBelow) return b;
  const uint32_t k = b - kExactBelow;
  const int e = kSubBits + static_cast<int>(k >> kSubBits);
  const int64_t sub = k & ((1u << kSubBits) - 1);
  return ((int64_t{1} << kSubBits) + sub) << (e - kSubBits);
}

void LatencyHistogram::add(int64_t micros) {
  if (micros < 0) micros = 0;  // a capture whose clock stepped back
  ++buckets_[bucket(micros)];
  max_ = count_ ? std::max(max_, micros) : micros;
  min_ = count_ ? std::min(min_, micros) : micros;
  ++count_;
}

int64_t LatencyHistogram::percentile(double p) const {
  if (!count_) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))));
  if (rank >= count_) return max_;  // the extremes are known exactly
  if (rank == 1) return min_;
  uint64_t seen = 0;
  for (const auto& [b, n] : buckets_) {
    seen += n;
    if (seen >= rank) return std::clamp(lower_bound(b), min_, max_);
  }
  return max_;
}

std::string LatencyTracker::api_name(int16_t key) const {
  const MessageProgram* m = ps_.find_api(std::to_string(key));
  return m ? std::string(m->api_name) : "api " + std::to_string(key);
}

std::optional<PendingRequest> RequestMatcher::request(const FrameContext& ctx, const Frame& f, bool selected) {
  // Produce with acks=0 gets no answer.
  if (f.api_key == 0 && f.program) {
    const Node* acks = find_field(f, ps_, f.body, "Acks");
    if (acks && acks->v.i == 0) return std::nullopt;
  }
  const Node* wait = f.program ? find_field(f, ps_, f.body, "MaxWaitMs") : nullptr;
  const PendingRequest p{packet_micros(ctx.packet), frame_of(ctx), f.api_key, f.api_version, selected,
                         wait ? static_cast<int32_t>(wait->v.i) : -1};
  const uint64_t key = uint64_t{ctx.conn->id} << 32 | static_cast<uint32_t>(f.correlation_id);
  auto [it, fresh] = pending_.try_emplace(key, p);
  if (fresh) return std::nullopt;
  const PendingRequest replaced = it->second;
  it->second = p;
  return replaced;
}

std::optional<PendingRequest> RequestMatcher::response(const FrameContext& ctx, const Frame& f) {
  auto it = pending_.find(uint64_t{ctx.conn->id} << 32 | static_cast<uint32_t>(f.correlation_id));
  if (it == pending_.end()) return std::nullopt;
  const PendingRequest p = it->second;
  pending_.erase(it);
  return p;
}

void RequestMatcher::end(uint32_t conn, const std::function<void(const PendingRequest&)>& unanswered) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->first >> 32 == conn) {
      unanswered(it->second);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void RequestMatcher::waiting(const std::function<void(uint32_t conn, const PendingRequest&)>& fn) const {
  for (const auto& [key, p] : pending_) fn(static_cast<uint32_t>(key >> 32), p);
}

void LatencyTracker::on_frame(const FrameContext& ctx, const Frame& f, bool selected) {
  if (ctx.not_kafka || !ctx.conn || f.api_key < 0) return;
  const uint32_t conn = ctx.conn->id;
  if (f.direction == Direction::Request) {
    if (auto replaced = matcher_.request(ctx, f, selected); replaced && replaced->selected) unanswered(conn, *replaced);
    if (selected && !conns_.count(conn)) conns_[conn] = ConnStats{ctx.src.str(), ctx.dst.str(), {}, 0};
    return;
  }
  if (ctx.unmatched) return;
  learn_broker_nodes(f, ps_, node_ids_);
  const auto matched = matcher_.response(ctx, f);
  if (!matched) return;
  const PendingRequest p = *matched;
  if (!p.selected && !selected) return;
  const int64_t d = std::max<int64_t>(0, packet_micros(ctx.packet) - p.micros);
  apis_[{p.api_key, p.api_version}].h.add(d);
  ConnStats& cs = conns_[conn];
  if (cs.client.empty()) {  // the first exchange of the connection chosen by its response
    cs.client = ctx.dst.str();
    cs.server = ctx.src.str();
  }
  cs.h.add(d);
  brokers_[cs.server].h.add(d);
  if (slowest_n_ == 0) return;
  const Slow s{d, p.frame, frame_of(ctx), p.api_key, p.api_version, conn, f.correlation_id};
  if (slowest_.size() < slowest_n_) {
    slowest_.push_back(s);
    std::push_heap(slowest_.begin(), slowest_.end(), std::greater<>());
  } else if (s.micros > slowest_.front().micros) {
    std::pop_heap(slowest_.begin(), slowest_.end(), std::greater<>());
    slowest_.back() = s;
    std::push_heap(slowest_.begin(), slowest_.end(), std::greater<>());
  }
}

void LatencyTracker::unanswered(uint32_t conn, const PendingRequest& p) {
  ++apis_[{p.api_key, p.api_version}].unanswered;
  ConnStats& cs = conns_[conn];
  ++cs.unanswered;
  ++brokers_[cs.server].unanswered;
}

void LatencyTracker::on_connection_end(const TcpConnection& c) {
  matcher_.end(c.id, [&](const PendingRequest& p) {
    if (p.selected) unanswered(c.id, p);
  });
}

void LatencyTracker::write(TextBuffer& out, bool json) const {
  // Requests still waiting when the capture ends count as unanswered.
  std::map<std::pair<int16_t, int16_t>, uint64_t> waiting;
  std::map<uint32_t, uint64_t> waiting_conn;
  std::map<std::string, uint64_t> waiting_broker;
  matcher_.waiting([&](uint32_t conn, const PendingRequest& p) {
    if (!p.selected) return;
    ++waiting[{p.api_key, p.api_version}];
    ++waiting_conn[conn];
    if (auto c = conns_.find(conn); c != conns_.end()) ++waiting_broker[c->second.server];
  });
  auto node_of = [&](const std::string& b) { return broker_node(node_ids_, b); };
  // Brokers by node id, then the addresses no answer named, by address.
  std::map<std::string, const BrokerStats*> by_address;
  static const BrokerStats kNoBroker;
  for (const auto& [b, s] : brokers_) by_address[b] = &s;
  for (const auto& [b, n] : waiting_broker) by_address.try_emplace(b, &kNoBroker);
  std::vector<std::pair<std::string, const BrokerStats*>> broker_rows(by_address.begin(), by_address.end());
  std::stable_sort(broker_rows.begin(), broker_rows.end(), [&](const auto& a, const auto& b) {
    const uint32_t na = static_cast<uint32_t>(node_of(a.first)), nb = static_cast<uint32_t>(node_of(b.first));
    return na < nb;   // -1, unknown, sorts last
  });
  auto broker_unans = [&](const std::string& b, const BrokerStats& s) {
    auto w = waiting_broker.find(b);
    return s.unanswered + (w == waiting_broker.end() ? 0 : w->second);
  };
  std::map<std::pair<int16_t, int16_t>, const ApiStats*> rows;
  static const ApiStats kNone;
  for (const auto& [k, s] : apis_) rows[k] = &s;
  for (const auto& [k, n] : waiting) rows.try_emplace(k, &kNone);
  std::vector<Slow> slow = slowest_;
  std::sort(slow.begin(), slow.end(), [](const Slow& a, const Slow& b) {
    return a.micros != b.micros ? a.micros > b.micros : a.request_frame < b.request_frame;
  });
  auto unans = [&](std::pair<int16_t, int16_t> k, const ApiStats& s) {
    auto w = waiting.find(k);
    return s.unanswered + (w == waiting.end() ? 0 : w->second);
  };
  auto conn_unans = [&](uint32_t id, const ConnStats& s) {
    auto w = waiting_conn.find(id);
    return s.unanswered + (w == waiting_conn.end() ? 0 : w->second);
  };

  if (json) {
    auto stats = [&](const LatencyHistogram& h) {
      out += "\"count\":";
      append_int(out, static_cast<int64_t>(h.count()));
      for (const auto& [name, v] : {std::pair<const char*, int64_t>{"p50Ms", h.percentile(50)},
                                    {"p90Ms", h.percentile(90)}, {"p99Ms", h.percentile(99)}, {"maxMs", h.max()}}) {
        out += ",\"";
        out += name;
        out += "\":";
        if (h.count()) append_ms(out, v); else out += "null";
      }
    };
    auto api = [&](int16_t key, int16_t version) {
      out += "\"apiKey\":";
      append_int(out, key);
      out += ",\"apiName\":";
      json_string(out, api_name(key));
      out += ",\"apiVersion\":";
      append_int(out, version);
    };
    out += "{\"latency\":{\"apis\":[";
    bool first = true;
    for (const auto& [k, s] : rows) {
      if (!first) out += ',';
      first = false;
      out += '{';
      api(k.first, k.second);
      out += ',';
      stats(s->h);
      out += ",\"unanswered\":";
      append_int(out, static_cast<int64_t>(unans(k, *s)));
      out += '}';
    }
    out += "],\"slowest\":[";
    first = true;
    for (const Slow& s : slow) {
      if (!first) out += ',';
      first = false;
      out += "{\"requestFrame\":";
      append_int(out, static_cast<int64_t>(s.request_frame));
      out += ",\"responseFrame\":";
      append_int(out, static_cast<int64_t>(s.response_frame));
      out += ",\"latencyMs\":";
      append_ms(out, s.micros);
      out += ',';
      api(s.api_key, s.api_version);
      out += ",\"correlationId\":";
      append_int(out, s.correlation_id);
      out += ",\"connection\":";
      append_int(out, s.conn);
      out += '}';
    }
    out += "],\"connections\":[";
    first = true;
    for (const auto& [id, c] : conns_) {
      if (!first) out += ',';
      first = false;
      out += "{\"connection\":";
      append_int(out, id);
      out += ",\"client\":";
      json_string(out, c.client);
      out += ",\"server\":";
      json_string(out, c.server);
      out += ',';
      stats(c.h);
      out += ",\"unanswered\":";
      append_int(out, static_cast<int64_t>(conn_unans(id, c)));
      out += '}';
    }
    out += "],\"brokers\":[";
    first = true;
    for (const auto& [b, s] : broker_rows) {
      if (!first) out += ',';
      first = false;
      out += "{\"broker\":";
      json_string(out, b);
      out += ",\"nodeId\":";
      if (const int32_t n = node_of(b); n >= 0) append_int(out, n); else out += "null";
      out += ',';
      stats(s->h);
      out += ",\"unanswered\":";
      append_int(out, static_cast<int64_t>(broker_unans(b, *s)));
      out += '}';
    }
    out += "]}}\n";
    return;
  }

  out += "latency: request to response, ms (percentiles by nearest rank; exact below 8.192 ms, else within 0.013%)\n";
  size_t w_api = 3;
  for (const auto& [k, s] : rows) w_api = std::max(w_api, api_name(k.first).size());
  auto header = [&](std::string_view first, size_t width) {
    pad(out, first, width);
    for (const char* h : {"count", "p50", "p90", "p99", "max", "unanswered"}) {
      out += "  ";
      pad(out, h, std::string_view(h) == "count" ? 7 : std::string_view(h) == "unanswered" ? 10 : 9, true);
    }
    out += '\n';
  };
  auto cells = [&](const LatencyHistogram& h, uint64_t missing) {
    out += "  ";
    pad(out, std::to_string(h.count()), 7, true);
    for (int64_t v : {h.percentile(50), h.percentile(90), h.percentile(99), h.max()}) {
      out += "  ";
      pad(out, h.count() ? ms(v) : "-", 9, true);
    }
    out += "  ";
    pad(out, std::to_string(missing), 10, true);
    out += '\n';
  };
  header("api" + std::string(w_api - 3, ' ') + "  version", w_api + 9);
  for (const auto& [k, s] : rows) {
    pad(out, api_name(k.first), w_api);
    out += "  ";
    pad(out, std::to_string(k.second), 7, true);
    cells(s->h, unans(k, *s));
  }
  if (!slow.empty()) {
    out += "slowest: request frame -> response frame, ms, api, connection\n";
    for (const Slow& s : slow) {
      char line[96];
      snprintf(line, sizeof line, "  %8llu -> %-8llu %9s  ", static_cast<unsigned long long>(s.request_frame),
               static_cast<unsigned long long>(s.response_frame), ms(s.micros).c_str());
      out += line;
      out += api_name(s.api_key);
      out += " v";
      append_int(out, s.api_version);
      out += " corr=";
      append_int(out, s.correlation_id);
      out += " conn ";
      append_int(out, s.conn);
      out += '\n';
    }
  }
  if (!conns_.empty()) {
    size_t w_conn = 10;
    std::vector<std::string> names;
    for (const auto& [id, c] : conns_) {
      names.push_back(std::to_string(id) + " " + c.client + " \u2192 " + c.server);
      w_conn = std::max(w_conn, names.back().size() - 2);  // the arrow is 3 bytes, 1 column
    }
    out += "per connection:\n";
    header("connection", w_conn);
    size_t i = 0;
    for (const auto& [id, c] : conns_) {
      out += names[i];
      out.append(w_conn - (names[i].size() - 2), ' ');
      ++i;
      cells(c.h, conn_unans(id, c));
    }
  }
  if (!broker_rows.empty()) {
    // "node 2 127.0.0.12:9092", or the address alone when no answer named its node.
    std::vector<std::string> names;
    size_t w = 6;
    for (const auto& [b, s] : broker_rows) {
      names.push_back(broker_name(node_ids_, b));
      w = std::max(w, names.back().size());
    }
    out += "per broker:\n";
    header("broker", w);
    size_t i = 0;
    for (const auto& [b, s] : broker_rows) {
      pad(out, names[i++], w);
      cells(s->h, broker_unans(b, *s));
    }
  }
}

}  // namespace kwire
