#include "dissector/protocol/session.hpp"

#include <algorithm>

#include "dissector/wire/wire.hpp"

namespace kwire {

namespace {
constexpr int kRequests = 0;   // bytes from the Kafka client
constexpr size_t kPlausibleRequestBytes = 14;  // size, api key, version, correlation id, client id length

bool is_tls_record(std::span<const uint8_t> b) {
  return b.size() >= 3 && b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04;
}
}  // namespace

bool plausible_request(const ProgramSet& ps, std::span<const uint8_t> b) {
  if (b.size() < kPlausibleRequestBytes) return false;
  int32_t size = static_cast<int32_t>(wire::load_be32(b.data()));
  if (size < 10 || size > (256 << 20)) return false;
  auto api = static_cast<int16_t>(wire::load_be16(b.data() + 4));
  auto version = static_cast<int16_t>(wire::load_be16(b.data() + 6));
  if (!ps.find(api, version, Direction::Request)) return false;
  // Client id: a classic nullable string that must fit in the message.
  auto client_len = static_cast<int16_t>(wire::load_be16(b.data() + 12));
  return client_len >= -1 && client_len <= size - 10;
}

struct KafkaSessions::Direction_ {
  std::vector<uint8_t> buf;     // a message not yet complete
  uint64_t buf_offset = 0;      // stream offset of buf[0]
  uint64_t next_offset = 0;     // stream offset of the next byte expected
  bool dead = false;            // lost sync: the rest of this direction is not decoded
  PacketMeta last;              // the latest packet of this direction
};

struct KafkaSessions::Conn {
  TcpConnection tcp;
  Role role = Role::Undecided;
  bool swapped = false;         // the reassembler's client is the broker
  bool sasl_raw = false;        // raw SASL tokens follow SaslHandshake v0
  bool sasl_handshake_pending = false;
  std::vector<uint8_t> held[2];   // first bytes per side while the role is undecided
  uint64_t held_offset[2] = {0, 0};
  Direction_ dirs[2];
  struct Pending { int32_t corr; int16_t api; int16_t version; };
  std::deque<Pending> pending;
};

KafkaSessions::KafkaSessions(const ProgramSet& ps, SessionOptions opts, FrameHandler& out)
    : ps_(ps), decoder_(ps), opts_(std::move(opts)), out_(out) {}

KafkaSessions::~KafkaSessions() = default;

KafkaSessions::Conn* KafkaSessions::conn(const TcpConnection& c) {
  auto it = conns_.find(c.id);
  if (it == conns_.end()) {
    on_open(c);
    it = conns_.find(c.id);
  }
  return it->second.get();
}

void KafkaSessions::on_open(const TcpConnection& c) {
  auto k = std::make_unique<Conn>();
  k->tcp = c;
  conns_[c.id] = std::move(k);
}

// Whether a connection carries Kafka, and which side is the client: by port,
// by a broker endpoint already seen speaking Kafka, or by the first request.
KafkaSessions::Role KafkaSessions::decide_roles(Conn& c, int side, std::span<const uint8_t> bytes) {
  if (opts_.ports.count(c.tcp.server.port) || is_known_broker(c.tcp.server)) return Role::Kafka;
  if (opts_.ports.count(c.tcp.client.port) || is_known_broker(c.tcp.client)) {
    c.swapped = true;
    return Role::Kafka;
  }
  if (!opts_.detect_other_ports) return Role::NotKafka;
  if (bytes.size() < kPlausibleRequestBytes) return Role::Undecided;  // wait for more
  if (!plausible_request(ps_, bytes)) return Role::NotKafka;
  c.swapped = side == 1;  // the plausible request came from the reassembler's server side
  known_brokers_.push_back(side == 1 ? c.tcp.client : c.tcp.server);
  return Role::Kafka;
}

bool KafkaSessions::is_known_broker(const Endpoint& e) const {
  return std::find(known_brokers_.begin(), known_brokers_.end(), e) != known_brokers_.end();
}

void KafkaSessions::on_data(const TcpConnection& t, StreamSide side, uint64_t offset,
                            std::span<const uint8_t> bytes, const PacketMeta& meta) {
  Conn& c = *conn(t);
  int s = side == StreamSide::FromClient ? 0 : 1;
  if (c.role == Role::Undecided) {
    // A first segment can be shorter than a request header (clients may
    // write the size prefix on its own): hold it until there is enough.
    auto& held = c.held[s];
    if (held.empty()) c.held_offset[s] = offset;
    held.insert(held.end(), bytes.begin(), bytes.end());
    c.role = decide_roles(c, s, held);
    if (c.role == Role::Undecided) return;
    if (c.role == Role::Kafka) {
      for (int k = 0; k < 2; ++k)
        if (!c.held[k].empty()) consume(c, k ^ (c.swapped ? 1 : 0), c.held[k], c.held_offset[k], meta);
    }
    c.held[0] = {};
    c.held[1] = {};
    return;
  }
  if (c.role != Role::Kafka) return;
  int dir = s ^ (c.swapped ? 1 : 0);
  consume(c, dir, bytes, offset, meta);
}

void KafkaSessions::consume(Conn& c, int dir, std::span<const uint8_t> bytes, uint64_t offset,
                            const PacketMeta& meta) {
  Direction_& d = c.dirs[dir];
  if (d.dead || bytes.empty()) return;
  if (offset == 0 && dir == kRequests && is_tls_record(bytes)) {
    c.dirs[0].dead = c.dirs[1].dead = true;
    report(c, dir, offset, meta, bytes, "stream is TLS-encrypted; not decoded", true);
    return;
  }
  d.next_offset = offset + bytes.size();
  d.last = meta;
  std::span<const uint8_t> in = bytes;
  uint64_t in_offset = offset;
  if (!d.buf.empty()) {
    // Complete the buffered message first; copy only what it still needs.
    if (d.buf.size() < 4) {
      size_t take = std::min(in.size(), 4 - d.buf.size());
      d.buf.insert(d.buf.end(), in.begin(), in.begin() + static_cast<long>(take));
      in = in.subspan(take);
      in_offset += take;
      if (d.buf.size() < 4) return;
    }
    int32_t size = static_cast<int32_t>(wire::load_be32(d.buf.data()));
    size_t want = 4 + static_cast<size_t>(size) - d.buf.size();
    size_t take = std::min(in.size(), want);
    if (size < 0 || static_cast<uint32_t>(size) > opts_.max_message) {
      d.dead = true;
      report(c, dir, d.buf_offset, meta, d.buf,
             "size prefix " + std::to_string(size) + " is not a plausible Kafka message size; the rest of this direction is not decoded",
             false);
      d.buf.clear();
      return;
    }
    d.buf.insert(d.buf.end(), in.begin(), in.begin() + static_cast<long>(take));
    in = in.subspan(take);
    in_offset += take;
    if (d.buf.size() < 4 + static_cast<size_t>(size)) return;
    message(c, dir, d.buf, d.buf_offset, meta);
    d.buf.clear();
    if (d.dead) return;
  }
  // Whole messages straight from the packet: no copy.
  while (in.size() >= 4) {
    int32_t size = static_cast<int32_t>(wire::load_be32(in.data()));
    if (size < 0 || static_cast<uint32_t>(size) > opts_.max_message) {
      d.dead = true;
      report(c, dir, in_offset, meta, in,
             "size prefix " + std::to_string(size) + " is not a plausible Kafka message size; the rest of this direction is not decoded",
             false);
      return;
    }
    size_t total = 4 + static_cast<size_t>(size);
    if (in.size() < total) break;
    message(c, dir, in.first(total), in_offset, meta);
    if (d.dead) return;
    in = in.subspan(total);
    in_offset += total;
  }
  if (!in.empty()) {
    d.buf.assign(in.begin(), in.end());
    d.buf_offset = in_offset;
  }
}

FrameContext KafkaSessions::context(const Conn& c, int dir, uint64_t offset, const PacketMeta& meta) {
  FrameContext ctx;
  ctx.number = ++frames_;
  ctx.packet = meta;
  ctx.conn = &c.tcp;
  const Endpoint& client = c.swapped ? c.tcp.server : c.tcp.client;
  const Endpoint& server = c.swapped ? c.tcp.client : c.tcp.server;
  ctx.src = dir == kRequests ? client : server;
  ctx.dst = dir == kRequests ? server : client;
  ctx.stream_offset = offset;
  return ctx;
}

void KafkaSessions::message(Conn& c, int dir, std::span<const uint8_t> msg, uint64_t offset, const PacketMeta& meta) {
  FrameContext ctx = context(c, dir, offset, meta);

  if (c.sasl_raw) {
    ctx.not_kafka = true;
    ctx.note = "SASL token after SaslHandshake v0";
    frame_.clear();
    frame_.message = msg;
    frame_.direction = dir == kRequests ? Direction::Request : Direction::Response;
    out_.on_frame(ctx, frame_);
    return;
  }

  if (dir == kRequests) {
    decoder_.decode_request(msg, frame_);
    if (frame_.api_key >= 0 && msg.size() >= 12) {
      if (c.pending.size() >= 4096) c.pending.pop_front();  // acks=0 produce never gets answered
      c.pending.push_back({frame_.correlation_id, frame_.api_key, frame_.api_version});
      if (frame_.api_key == 17 && frame_.api_version == 0) c.sasl_handshake_pending = true;
    }
    out_.on_frame(ctx, frame_);
    return;
  }

  int32_t corr = msg.size() >= 8 ? static_cast<int32_t>(wire::load_be32(msg.data() + 4)) : 0;
  auto it = std::find_if(c.pending.begin(), c.pending.end(), [&](const Conn::Pending& p) { return p.corr == corr; });
  if (it != c.pending.end()) {
    Conn::Pending p = *it;
    // Responses come in request order: anything older was never answered.
    c.pending.erase(c.pending.begin(), it + 1);
    decoder_.decode_response(msg, p.api, p.version, frame_);
    if (p.api == 17 && p.version == 0 && frame_.ok()) {
      const Node* err = find_field(frame_, ps_, frame_.body, "ErrorCode");
      if (err && err->v.i == 0) c.sasl_raw = true;
    }
    out_.on_frame(ctx, frame_);
    return;
  }
  ctx.unmatched = true;
  if (opts_.guess) {
    // Try every response layout, newest first; keep the first clean decode.
    const auto& all = ps_.messages();
    for (auto m = all.rbegin(); m != all.rend(); ++m) {
      if (m->direction != Direction::Response || ps_.find(m->api_key, m->version, Direction::Response) != &*m) continue;
      decoder_.decode_response(msg, m->api_key, m->version, frame_);
      if (frame_.ok()) {
        frame_.guessed = true;
        out_.on_frame(ctx, frame_);
        return;
      }
    }
  }
  frame_.clear();
  frame_.message = msg;
  frame_.direction = Direction::Response;
  frame_.correlation_id = corr;
  out_.on_frame(ctx, frame_);
}

void KafkaSessions::report(Conn& c, int dir, uint64_t offset, const PacketMeta& meta, std::span<const uint8_t> bytes,
                           std::string reason, bool not_kafka) {
  FrameContext ctx = context(c, dir, offset, meta);
  ctx.not_kafka = not_kafka;
  frame_.clear();
  frame_.message = bytes;
  frame_.direction = dir == kRequests ? Direction::Request : Direction::Response;
  FrameDecoder::RequestId id;
  if (dir == kRequests && !not_kafka && FrameDecoder::peek_request(bytes, id)) {
    frame_.api_key = id.api_key;
    frame_.api_version = id.api_version;
    frame_.correlation_id = id.correlation_id;
    frame_.program = ps_.find(id.api_key, id.api_version, Direction::Request);
  } else if (bytes.size() >= 8) {
    frame_.correlation_id = static_cast<int32_t>(wire::load_be32(bytes.data() + 4));
  }
  if (not_kafka) ctx.note = reason;
  else frame_.fail(0, std::move(reason));
  out_.on_frame(ctx, frame_);
}

void KafkaSessions::on_gap(const TcpConnection& t, StreamSide side, uint64_t offset, uint64_t length,
                           const PacketMeta& meta) {
  Conn& c = *conn(t);
  if (c.role != Role::Kafka) return;
  int dir = (side == StreamSide::FromClient ? 0 : 1) ^ (c.swapped ? 1 : 0);
  Direction_& d = c.dirs[dir];
  if (d.dead) return;
  d.dead = true;
  std::string reason = std::to_string(length) + " bytes at stream offset " + std::to_string(offset) +
                       " are missing from the capture; the rest of this direction is not decoded";
  if (!d.buf.empty()) report(c, dir, d.buf_offset, meta, d.buf, reason, false);
  else report(c, dir, offset, meta, {}, reason, false);
  d.buf.clear();
}

void KafkaSessions::on_close(const TcpConnection& t) {
  auto it = conns_.find(t.id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  for (int dir = 0; dir < 2; ++dir) {
    Direction_& d = c.dirs[dir];
    if (d.buf.empty() || d.dead) continue;
    std::string reason;
    if (d.buf.size() < 4) {
      reason = "stream ends inside a size prefix (" + std::to_string(d.buf.size()) + " of 4 bytes)";
    } else {
      int32_t size = static_cast<int32_t>(wire::load_be32(d.buf.data()));
      reason = "message truncated: size prefix says " + std::to_string(size) + " bytes, the capture has " +
               std::to_string(d.buf.size() - 4);
    }
    report(c, dir, d.buf_offset, d.last, d.buf, reason, false);
  }
  conns_.erase(it);
}

void KafkaSessions::on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) {
  out_.on_capture_error(meta, where, reason);
}

}  // namespace kwire
