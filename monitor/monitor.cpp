#include "monitor/monitor.hpp"

#include <prometheus/text_serializer.h>

#include "dissector/protocol/brokers.hpp"
#include "dissector/protocol/codes.hpp"

namespace kwire {

namespace {

constexpr std::string_view kOther = "other";
constexpr int16_t kApiVersions = 18;

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

prometheus::Family<Counter>& counter(prometheus::Registry& r, const std::string& name, const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

std::string text(const Node* n) { return n && !n->is_null() ? std::string(n->str()) : std::string(); }

}  // namespace

const std::vector<double>& response_time_buckets() {
  static const std::vector<double> b = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25,   0.5,     1,      2.5,   5,      10,    25,   60};
  return b;
}

std::string_view LabelLimit::fold(std::string_view value, int64_t now_micros) {
  // Heterogeneous lookup is C++20 for unordered containers only with a
  // transparent hash; one key string per message is cheap next to decoding.
  std::string key(value);
  auto it = seen_.find(key);
  if (it == seen_.end()) {
    if (seen_.size() >= limit_) {
      folded_.Increment();
      return kOther;
    }
    it = seen_.emplace(std::move(key), now_micros).first;
  }
  it->second = now_micros;
  return it->first;
}

void LabelLimit::expire(int64_t before_micros) {
  std::erase_if(seen_, [&](const auto& kv) { return kv.second < before_micros; });
}

// Every family and its series. The label values of a series are folded by
// the label limits before the series is looked up.
struct Monitor::Families {
  prometheus::Registry& r;
  const size_t limit;  // series per metric
  // Health first: the series sets below count into these.
  prometheus::Family<Counter>& folded_family =
      counter(r, "kwire_label_values_folded_total", "label values folded into \"other\" by the label limits, by label");
  prometheus::Family<Counter>& dropped_family =
      counter(r, "kwire_series_dropped_total", "observations dropped because their metric reached its series limit");
  Counter& expired = counter(r, "kwire_series_expired_total", "series removed after the expiry time unseen").Add({});
  Counter& folded_client = folded_family.Add({{"label", "client_id"}});
  Counter& folded_topic = folded_family.Add({{"label", "topic"}});
  Counter& folded_broker = folded_family.Add({{"label", "broker"}});

  Counter& packets = counter(r, "kwire_packets_total", "packets captured (read from the file)").Add({});
  Counter& bytes = counter(r, "kwire_bytes_total", "bytes captured (read from the file)").Add({});
  Counter& kernel_dropped =
      counter(r, "kwire_kernel_dropped_packets_total", "packets the kernel dropped (capture buffer full)").Add({});
  Counter& if_dropped =
      counter(r, "kwire_interface_dropped_packets_total", "packets the interface or driver dropped").Add({});
  prometheus::Family<Counter>& undecoded = counter(
      r, "kwire_undecoded_messages_total",
      "Kafka messages, or units of a Kafka connection, that kwire did not decode, by reason");
  Counter& skipped_bytes = counter(
      r, "kwire_skipped_bytes_total", "bytes of Kafka connections in no message (lost from the capture or skipped)").Add({});
  Counter& capture_errors = counter(r, "kwire_capture_errors_total", "damaged packets or capture records").Add({});
  Counter& kafka_connections = counter(r, "kwire_kafka_connections_total", "connections recognised as Kafka").Add({});
  Counter& midstream =
      counter(r, "kwire_midstream_connections_total", "Kafka connections joined mid-stream (their start not seen)").Add({});
  Counter& resyncs = counter(r, "kwire_resyncs_total", "times a direction found a message start again after a gap").Add({});
  Counter& unanswered = counter(r, "kwire_unanswered_requests_total", "requests whose response never came").Add({});
  prometheus::Family<Counter>& tls = counter(r, "kwire_tls_connections_total",
                                             "TLS connections, by state: decrypted, or not_decrypted (no key, a "
                                             "cipher kwire does not decrypt, no handshake seen)");
  Counter& tls_failures =
      counter(r, "kwire_tls_failures_total", "TLS records that could not be decrypted (a wrong key, a bad MAC, a gap)")
          .Add({});

  SeriesSet<Counter> requests{
      counter(r, "kwire_requests_total", "Kafka requests, by api, api_version and broker"), limit,
      dropped_of("requests")};
  SeriesSet<Counter> responses{
      counter(r, "kwire_responses_total", "Kafka responses matched to their request, by api, api_version and broker"),
      limit, dropped_of("responses")};
  SeriesSet<Histogram> response_time{
      prometheus::BuildHistogram()
          .Name("kwire_response_seconds")
          .Help("service time: request to response, by api and broker; long-polls (requests with MaxWaitMs > 0) "
                "are in kwire_long_poll_seconds instead")
          .Register(r),
      limit, dropped_of("response_seconds")};
  SeriesSet<Histogram> long_poll{
      prometheus::BuildHistogram()
          .Name("kwire_long_poll_seconds")
          .Help("request to response of requests the broker may hold up to their MaxWaitMs (Fetch, ShareFetch), by "
                "api and broker")
          .Register(r),
      limit, dropped_of("long_poll_seconds")};
  SeriesSet<Counter> long_poll_expired{
      counter(r, "kwire_long_poll_expired_total",
              "long-polls answered at or after their MaxWaitMs (the broker waited the whole time), by api and broker"),
      limit, dropped_of("long_poll_expired")};
  SeriesSet<Counter> throttled{
      counter(r, "kwire_throttled_responses_total", "responses with ThrottleTimeMs > 0, by api, broker and client_id"),
      limit, dropped_of("throttled_responses")};
  SeriesSet<Counter> throttle_time{
      counter(r, "kwire_throttle_seconds_total", "the ThrottleTimeMs of responses, summed, by api, broker and client_id"),
      limit, dropped_of("throttle_seconds")};
  SeriesSet<Counter> errors{
      counter(r, "kwire_errors_total",
              "non-zero error codes in responses (top level, per topic, per partition, per entry), by api, code, "
              "topic (empty when the error is not under a topic), broker and client_id"),
      limit, dropped_of("errors")};
  SeriesSet<Counter> client_requests{
      counter(r, "kwire_client_requests_total", "Kafka requests by client_id and api"), limit,
      dropped_of("client_requests")};
  SeriesSet<Counter> client_responses{
      counter(r, "kwire_client_responses_total", "responses timed into kwire_client_response_seconds_total"), limit,
      dropped_of("client_responses")};
  SeriesSet<Counter> client_time{
      counter(r, "kwire_client_response_seconds_total",
              "service time of the client's exchanges summed (long-polls excluded), by client_id and api"),
      limit, dropped_of("client_response_seconds")};
  SeriesSet<Gauge> client_info{prometheus::BuildGauge()
                                   .Name("kwire_client_info")
                                   .Help("1 for each client_id with the software name and version its ApiVersions "
                                         "(v3+) request announced")
                                   .Register(r),
                               limit, dropped_of("client_info")};

  LabelLimit clients, topics, brokers;

  Families(prometheus::Registry& reg, const MonitorLimits& l)
      : r(reg),
        limit(l.series),
        clients(l.client_ids, folded_client),
        topics(l.topics, folded_topic),
        brokers(l.brokers, folded_broker) {}

  Counter& dropped_of(const std::string& metric) { return dropped_family.Add({{"metric", "kwire_" + metric}}); }

  void expire(int64_t before) {
    size_t n = 0;
    for (auto* s : {&requests, &responses, &long_poll_expired, &throttled, &throttle_time, &errors, &client_requests,
                    &client_responses, &client_time})
      n += s->expire(before);
    n += response_time.expire(before) + long_poll.expire(before) + client_info.expire(before);
    expired.Increment(static_cast<double>(n));
    clients.expire(before);
    topics.expire(before);
    brokers.expire(before);
  }
};

Monitor::Monitor(const ProgramSet& ps, MonitorLimits limits)
    : ps_(ps),
      limits_(limits),
      registry_(std::make_shared<prometheus::Registry>()),
      m_(std::make_unique<Families>(*registry_, limits)),
      matcher_(ps) {}

Monitor::~Monitor() = default;

std::string Monitor::exposition() const { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

// The frame's own program names its api; only a version the specs do not
// have needs the lookup by key.
std::string Monitor::api_name(const Frame& f) const {
  if (f.program) return std::string(f.program->api_name);
  const MessageProgram* m = ps_.find_api(std::to_string(f.api_key));
  return m ? std::string(m->api_name) : std::to_string(f.api_key);
}

// The node id where a Metadata or DescribeCluster answer named the address,
// else the address itself.
std::string Monitor::broker_of(const Endpoint& server) {
  const std::string address = server.str();
  const int32_t node = broker_node(node_ids_, address);
  return std::string(m_->brokers.fold(node < 0 ? address : std::to_string(node), now_));
}

void Monitor::on_frame(const FrameContext& ctx, const Frame& f) {
  now_ = std::max(now_, packet_micros(ctx.packet));
  if (ctx.not_kafka) {
    undecoded(ctx.note.starts_with("SASL token")               ? "sasl_token"
              : ctx.note.find("TLS") != std::string::npos ? "tls_encrypted"
                                                          : "not_kafka");
    return;
  }
  // A response whose request was not captured has no api version to count
  // it under, nor a time: it counts only as kwire's health.
  if (ctx.unmatched) {
    undecoded("unmatched_response");
    return;
  }
  if (!ctx.conn || f.api_key < 0) {
    undecoded("malformed");
    return;
  }
  if (!f.program) undecoded("unknown_api_version");
  else if (!f.ok()) undecoded("malformed");
  if (f.direction == Direction::Request) request(ctx, f, ctx.conn->id);
  else response(ctx, f, ctx.conn->id);
}

void Monitor::request(const FrameContext& ctx, const Frame& f, uint32_t conn) {
  if (auto replaced = matcher_.request(ctx, f)) m_->unanswered.Increment();
  const std::string api = api_name(f);
  const std::string broker = broker_of(ctx.dst);
  if (auto* c = m_->requests.get({{"api", api}, {"api_version", std::to_string(f.api_version)}, {"broker", broker}}, now_))
    c->Increment();
  if (!f.nodes.empty()) {
    if (const Node* id = find_field(f, ps_, 0, "ClientId"); id && !id->is_null()) clients_[conn] = std::string(id->str());
  }
  const std::string client(m_->clients.fold(clients_[conn], now_));
  if (auto* c = m_->client_requests.get({{"client_id", client}, {"api", api}}, now_)) c->Increment();
  if (f.api_key == kApiVersions && f.program && f.body) {
    const std::string name = text(find_field(f, ps_, f.body, "ClientSoftwareName"));
    const std::string version = text(find_field(f, ps_, f.body, "ClientSoftwareVersion"));
    if (!name.empty() || !version.empty()) {
      if (auto* g = m_->client_info.get({{"client_id", client}, {"software_name", name}, {"software_version", version}},
                                        now_))
        g->Set(1);
    }
  }
}

void Monitor::response(const FrameContext& ctx, const Frame& f, uint32_t conn) {
  learn_broker_nodes(f, ps_, node_ids_);
  const auto p = matcher_.response(ctx, f);
  if (!p) return;
  const std::string api = api_name(f);
  const std::string broker = broker_of(ctx.src);
  const auto cl = clients_.find(conn);
  const std::string client(m_->clients.fold(cl == clients_.end() ? std::string() : cl->second, now_));
  if (auto* c = m_->responses.get({{"api", api}, {"api_version", std::to_string(f.api_version)}, {"broker", broker}}, now_))
    c->Increment();
  const int64_t micros = std::max<int64_t>(0, packet_micros(ctx.packet) - p->micros);
  const double seconds = static_cast<double>(micros) / 1e6;
  const prometheus::Labels by_api{{"api", api}, {"broker", broker}};
  if (p->max_wait_ms > 0) {
    // The broker may hold the request up to MaxWaitMs when it has too little
    // to answer: time spent waiting for data, not serving.
    if (auto* h = m_->long_poll.get(by_api, now_, response_time_buckets())) h->Observe(seconds);
    if (micros >= int64_t{p->max_wait_ms} * 1000) {
      if (auto* c = m_->long_poll_expired.get(by_api, now_)) c->Increment();
    }
  } else {
    if (auto* h = m_->response_time.get(by_api, now_, response_time_buckets())) h->Observe(seconds);
    if (auto* c = m_->client_responses.get({{"client_id", client}, {"api", api}}, now_)) c->Increment();
    if (auto* c = m_->client_time.get({{"client_id", client}, {"api", api}}, now_)) c->Increment(seconds);
  }
  if (!f.program || !f.body) return;
  if (const Node* t = find_field(f, ps_, f.body, "ThrottleTimeMs"); t && t->v.i > 0) {
    const prometheus::Labels l{{"api", api}, {"broker", broker}, {"client_id", client}};
    if (auto* c = m_->throttled.get(l, now_)) c->Increment();
    if (auto* c = m_->throttle_time.get(l, now_)) c->Increment(static_cast<double>(t->v.i) / 1e3);
  }
  errors(f, api, broker, client);
}

// Every error code field of the response, at any depth, found by what the
// specs say the field is: no api is special.
void Monitor::errors(const Frame& f, const std::string& api, const std::string& broker, const std::string& client) {
  const uint32_t end = f.nodes[f.body].end;
  for (uint32_t i = f.body + 1; i < end; ++i) {
    const Node& n = f.nodes[i];
    if ((n.flags & kElement) || n.type != WireType::Int16 || n.v.i == 0 || !is_error_code_field(ps_.field(n.desc)))
      continue;
    const std::string_view name = error_name(n.v.i);
    const std::string code = name.empty() ? std::to_string(n.v.i) : std::string(name);
    const std::string topic(m_->topics.fold(topic_of(f, i), now_));
    if (auto* c = m_->errors.get(
            {{"api", api}, {"code", code}, {"topic", topic}, {"broker", broker}, {"client_id", client}}, now_))
      c->Increment();
  }
}

// The name of the topic an error sits under: the nearest enclosing struct
// with a field whose entity type is a topic name. Empty for a top-level
// error, and where the answer names its topics by id only.
std::string_view Monitor::topic_of(const Frame& f, uint32_t node) const {
  for (uint32_t p = f.nodes[node].parent; p != f.body;) {
    for (uint32_t c : Children(f, p)) {
      const Node& n = f.nodes[c];
      if (!(n.flags & kElement) && n.has_data() && !n.is_null() && ps_.field(n.desc).entity == "topicName")
        return n.str();
    }
    const uint32_t up = f.nodes[p].parent;
    if (up == p) break;
    p = up;
  }
  return {};
}

void Monitor::undecoded(std::string_view reason) {
  m_->undecoded.Add({{"reason", std::string(reason)}}).Increment();
}

void Monitor::on_skip(const FrameContext& ctx, uint64_t length, const std::string&) {
  now_ = std::max(now_, packet_micros(ctx.packet));
  m_->skipped_bytes.Increment(static_cast<double>(length));
}

void Monitor::on_capture_error(const PacketMeta&, const std::string&, const std::string&) {
  m_->capture_errors.Increment();
}

void Monitor::on_verdict(const TcpConnection& c, bool kafka, const Endpoint&) {
  if (!kafka) return;
  m_->kafka_connections.Increment();
  if (!c.saw_syn) m_->midstream.Increment();
}

void Monitor::on_tls(const TcpConnection&, const TlsEvent& e) {
  if (e.kind == TlsEvent::Kind::Decrypted) m_->tls.Add({{"state", "decrypted"}}).Increment();
  else if (e.kind == TlsEvent::Kind::NotDecrypted) m_->tls.Add({{"state", "not_decrypted"}}).Increment();
  else if (e.kind == TlsEvent::Kind::Failed) m_->tls_failures.Increment();
}

void Monitor::on_connection_end(const TcpConnection& c) {
  matcher_.end(c.id, [&](const PendingRequest&) { m_->unanswered.Increment(); });
  clients_.erase(c.id);
}

// Counters only grow: the totals come in, the difference is added.
void Monitor::add_to(prometheus::Counter& c, uint64_t total, uint64_t& last) {
  if (total > last) c.Increment(static_cast<double>(total - last));
  last = std::max(last, total);
}

void Monitor::capture_totals(const CaptureTotals& t) {
  add_to(m_->packets, t.packets, last_capture_.packets);
  add_to(m_->bytes, t.bytes, last_capture_.bytes);
  add_to(m_->kernel_dropped, t.kernel_dropped, last_capture_.kernel_dropped);
  add_to(m_->if_dropped, t.if_dropped, last_capture_.if_dropped);
}

void Monitor::session_totals(const SessionStats& s) {
  add_to(m_->resyncs, s.resyncs, last_session_.resyncs);
}

void Monitor::expire(int64_t now_micros) {
  if (limits_.expire_seconds <= 0) return;
  // A sweep walks every series: a tenth of the expiry time (10 s at most)
  // late is soon enough, and keeps the sweeps rare on a busy capture.
  const int64_t every = std::min<int64_t>(limits_.expire_seconds * 100'000, 10'000'000);
  if (last_sweep_ && now_micros - last_sweep_ < every) return;
  last_sweep_ = now_micros;
  m_->expire(now_micros - limits_.expire_seconds * 1'000'000);
}

}  // namespace kwire
