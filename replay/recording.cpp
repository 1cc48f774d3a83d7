#include "replay/recording.hpp"

#include <algorithm>
#include <map>

#include "replay/routing.hpp"

#include <unordered_map>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"

namespace kwire::replay {

namespace {

int64_t micros(const PacketMeta& m) { return m.ts_sec * 1000000 + m.ts_usec; }

class Collector : public FrameHandler {
 public:
  Collector(const ProgramSet& ps, Recording& out) : ps_(ps), out_(out) {}

  void on_connection_start(const TcpConnection& c) override { open_[c.id] = Open{}; }

  void on_verdict(const TcpConnection& c, bool kafka, const Endpoint& client) override {
    if (!kafka) { ++out_.not_kafka; return; }
    Open& o = open_[c.id];
    if (o.session != SIZE_MAX) return;
    o.session = out_.sessions.size();
    RecordedSession& s = out_.sessions.emplace_back();
    s.id = static_cast<uint32_t>(out_.sessions.size());
    s.client = client;
    s.broker = client == c.client ? c.server : c.client;
    s.midstream = !c.saw_syn;
  }

  void on_frame(const FrameContext& ctx, const Frame& f) override {
    if (!ctx.conn) return;
    auto it = open_.find(ctx.conn->id);
    if (it == open_.end() || it->second.session == SIZE_MAX) return;
    Open& o = it->second;
    RecordedSession& s = out_.sessions[o.session];
    s.tls = s.tls || ctx.tls;
    if (ctx.not_kafka) {
      if (s.skip.empty()) s.skip = ctx.note.empty() ? "carries bytes that are not Kafka" : ctx.note;
      return;
    }
    if (f.direction == Direction::Request) request(s, o, ctx, f);
    else response(s, o, ctx, f);
  }

  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override {
    if (!ctx.conn) return;
    auto it = open_.find(ctx.conn->id);
    if (it == open_.end() || it->second.session == SIZE_MAX) return;
    RecordedSession& s = out_.sessions[it->second.session];
    s.midstream = true;
    out_.notes.push_back("session " + std::to_string(s.id) + ": " + std::to_string(length) +
                         " bytes at stream offset " + std::to_string(ctx.stream_offset) + " are in no message (" +
                         reason + ")");
  }

  void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override {
    out_.notes.push_back("packet " + std::to_string(meta.number) + ": " + where + ": " + reason);
  }

  void on_connection_end(const TcpConnection& c) override { open_.erase(c.id); }

 private:
  struct Open {
    size_t session = SIZE_MAX;
    std::unordered_map<int32_t, size_t> pending;  // correlation id -> exchange
  };

  void request(RecordedSession& s, Open& o, const FrameContext& ctx, const Frame& f) {
    Exchange& e = s.exchanges.emplace_back();
    e.frame = ctx.packet.number;
    e.request_us = micros(ctx.packet);
    e.api_key = f.api_key;
    e.api_version = f.api_version;
    e.correlation_id = f.correlation_id;
    e.malformed = !f.ok() || !f.program;
    e.request.assign(f.message.begin(), f.message.end());
    e.after = out_.responses;
    e.depth = static_cast<uint32_t>(o.pending.size() + 1);
    if (s.exchanges.size() == 1 && !f.nodes.empty())
      if (const Node* cid = find_field(f, ps_, 0, "ClientId"); cid && !cid->is_null()) s.client_id = cid->str();
    if (f.program) {
      // What brokers send each other is never replayed: the whole connection
      // is a broker's (a follower's fetcher, a controller channel).
      if (const BrokerTraffic b = broker_traffic(f, ps_); b && s.broker_traffic.empty()) {
        s.broker_traffic = b.kind;
        s.skip = "a broker's " + b.kind + " connection (" + b.detail + "): broker-to-broker traffic is never sent";
      }
      if (f.program->api_name == "Produce") {
        const Node* acks = f.body ? find_field(f, ps_, f.body, "Acks") : nullptr;
        if (acks && acks->v.i == 0) e.expects_response = false;
      }
      if (f.program->api_name == "SaslHandshake" && f.body) {
        const Node* mech = find_field(f, ps_, f.body, "Mechanism");
        s.sasl_mechanism = mech && !mech->is_null() ? std::string(mech->str()) : "?";
      }
    }
    if (e.expects_response) o.pending[f.correlation_id] = s.exchanges.size() - 1;
  }

  void response(RecordedSession& s, Open& o, const FrameContext& ctx, const Frame& f) {
    auto p = o.pending.find(f.correlation_id);
    if (ctx.unmatched || p == o.pending.end()) return;  // its request is not in the capture
    Exchange& e = s.exchanges[p->second];
    o.pending.erase(p);
    e.response_frame = ctx.packet.number;
    e.response_us = micros(ctx.packet);
    e.response.assign(f.message.begin(), f.message.end());
    e.response_seq = out_.responses++;
  }

  const ProgramSet& ps_;
  Recording& out_;
  std::unordered_map<uint32_t, Open> open_;
};

}  // namespace

bool load_recording(const std::string& file, const ProgramSet& ps, const SessionOptions& opts, Recording& out,
                    std::string& error, const CaptureOptions& capture) {
  Collector collector(ps, out);
  // Replay sends nested payloads as recorded: it need not look inside them.
  SessionOptions no_nested = opts;
  no_nested.nested = false;
  KafkaSessions sessions(ps, no_nested, collector);
  CaptureStats stats;
  if (!read_capture_file(file, capture, sessions, stats, error)) return false;
  if (stats.file_damaged) out.notes.push_back("the capture file is damaged; sessions end where it does");
  // TLS it could not read is not replayed: say so, or a run of nothing passes.
  if (const uint64_t n = sessions.stats().tls_undecrypted)
    out.notes.push_back(std::to_string(n) + (n == 1 ? " TLS connection is" : " TLS connections are") +
                        " not replayed: no key for them (give --tls-keylog FILE; kwire decode --stats names the"
                        " client randoms it lacks)");
  if (const uint64_t n = sessions.stats().tls_errors)
    out.notes.push_back(std::to_string(n) + " TLS " + (n == 1 ? "record" : "records") +
                        " did not decrypt; those connections are replayed up to where they stopped");
  mark_controller_listeners(out, ps);
  for (auto& s : out.sessions) {
    if (s.skip.empty() && !s.sasl_mechanism.empty())
      s.skip = "authenticates with SASL " + s.sasl_mechanism;
  }
  return true;
}

void mark_controller_listeners(Recording& rec, const ProgramSet& ps) {
  // Only a KRaft controller answers these (api keys of the protocol): Vote,
  // BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, BrokerRegistration,
  // BrokerHeartbeat, ControllerRegistration, AddRaftVoter, RemoveRaftVoter,
  // UpdateRaftVoter. Not the other controller-only apis: before KRaft some of
  // them went to the broker that was controller, on a listener clients share.
  static constexpr int16_t kQuorumOnly[] = {52, 53, 54, 59, 62, 63, 70, 80, 81, 82};
  std::map<std::string, std::string> listeners;  // endpoint -> what showed it
  for (const RecordedSession& s : rec.sessions)
    for (const Exchange& e : s.exchanges)
      if (std::find(std::begin(kQuorumOnly), std::end(kQuorumOnly), e.api_key) != std::end(kQuorumOnly)) {
        const MessageProgram* m = ps.find_api(std::to_string(e.api_key));
        const std::string api = m ? std::string(m->api_name) : "api key " + std::to_string(e.api_key);
        listeners.try_emplace(s.broker.str(), api + " v" + std::to_string(e.api_version) + " in frame " + std::to_string(e.frame));
        break;
      }
  for (RecordedSession& s : rec.sessions) {
    auto it = listeners.find(s.broker.str());
    if (it == listeners.end() || !s.broker_traffic.empty()) continue;
    s.broker_traffic = "controller";
    s.skip = "a connection to the controller listener " + it->first + " (it carries the quorum's " + it->second +
             "): broker-to-controller traffic is never sent";
  }
}

void select_exchanges(const ProgramSet& ps, const filter::Filter& f, const Recording& rec,
                      std::set<const Exchange*>& out) {
  FrameDecoder dec(ps);
  Frame req, resp;
  for (const auto& s : rec.sessions) {
    for (const auto& e : s.exchanges) {
      FrameContext rq;
      rq.packet.number = e.frame;
      rq.packet.ts_sec = e.request_us / 1000000;
      rq.packet.ts_usec = static_cast<int32_t>(e.request_us % 1000000);
      rq.src = s.client;
      rq.dst = s.broker;
      dec.decode_request(e.request, req);
      bool yes = f.match(req, rq);
      if (!yes && !e.response.empty()) {
        FrameContext rs = rq;
        rs.packet.number = e.response_frame;
        rs.packet.ts_sec = e.response_us / 1000000;
        rs.packet.ts_usec = static_cast<int32_t>(e.response_us % 1000000);
        rs.src = s.broker;
        rs.dst = s.client;
        dec.decode_response(e.response, e.api_key, e.api_version, resp);
        yes = f.match(resp, rs, &req, &rq);
      }
      if (yes) out.insert(&e);
    }
  }
}

}  // namespace kwire::replay
