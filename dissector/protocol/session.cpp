#include "dissector/protocol/session.hpp"

#include <algorithm>
#include <cstdlib>

#include "wire/wire.hpp"

namespace kwire {

namespace {
constexpr int kRequests = 0;   // direction index: bytes from the Kafka client
constexpr int kResponses = 1;
constexpr int16_t kProduce = 0;
constexpr int16_t kSaslHandshake = 17;
constexpr size_t kMaxWaiting = 256;  // hunt candidates waiting for their bytes, per direction

// A TLS record header: handshake/alert/change-cipher/application data, a
// 3.x version and a length no record may exceed.
bool is_tls_record(std::span<const uint8_t> b) {
  if (b.size() < 5 || b[0] < 0x14 || b[0] > 0x17 || b[1] != 0x03 || b[2] > 0x04) return false;
  return wire::load_be16(b.data() + 3) <= (1u << 14) + 2048;
}

int32_t size_at(std::span<const uint8_t> b, size_t i) { return static_cast<int32_t>(wire::load_be32(b.data() + i)); }
}  // namespace

// A request awaiting its response (or, while Probing, a request candidate
// awaiting the response that confirms it).
struct KafkaSessions::Pending {
  int32_t corr;
  int16_t api;
  int16_t version;
  ResponseHint hint{};  // what the response's nested payloads need from the request
};

const KafkaSessions::Pending* KafkaSessions::find(const PendingList& list, int32_t corr) {
  for (const auto& p : list)
    if (p.corr == corr) return &p;
  return nullptr;
}

// Where a search for message starts resumes, and the candidates that wait
// for the rest of their bytes.
struct KafkaSessions::Hunt {
  uint64_t scan = 0;
  std::vector<uint64_t> waiting;  // stream offsets, ascending
  void reset(uint64_t at) {
    scan = at;
    waiting.clear();
  }
  uint64_t keep_from() const { return waiting.empty() ? scan : std::min(scan, waiting.front()); }
};

bool plausible_request(const ProgramSet& ps, std::span<const uint8_t> b) {
  RequestHead h;
  if (!read_request_head(b, h)) return false;
  if (h.size < 10 || h.size > (256 << 20)) return false;
  if (h.api_key < 0 || h.api_version < 0 || !ps.find(h.api_key, h.api_version, Direction::Request)) return false;
  return h.client_id_length >= -1 && h.client_id_length <= h.size - 10;
}

// One direction of a Kafka connection.
struct KafkaSessions::Stream {
  Sync sync = Sync::Synced;
  std::vector<uint8_t> buf;     // bytes in no message yet: a partial message, or the hunt window
  uint64_t buf_offset = 0;      // stream offset of buf[0]
  uint64_t hunt_from = 0;       // Hunting: stream offset of the first byte not in a message
  bool at_hunt_start = true;    // Hunting: nothing skipped yet, so a chain of sizes may start here
  Hunt hunt;                    // Hunting (and Probing: requests in this side's bytes)
  Hunt confirm;                 // Probing: responses to the other side's request candidates
  bool seen = false;            // a byte of this stream has arrived
  uint64_t first_packet = 0;    // the packet that brought it
  std::string why;              // Hunting: why sync was lost, for the skip report
  PacketMeta last;              // the latest packet of this direction
  // The packets whose bytes are (partly) in buf: the stream offset their
  // bytes end at, and the packet. A message cut from buf later (after the
  // evidence came, in a packet of the other side) still carries the packet
  // that completed it.
  std::deque<std::pair<uint64_t, PacketMeta>> packets;
  void held(uint64_t end, const PacketMeta& meta) { packets.emplace_back(end, meta); }
  const PacketMeta& completing(uint64_t end, const PacketMeta& fallback) {
    while (!packets.empty() && packets.front().first <= buf_offset) packets.pop_front();
    for (const auto& [e, m] : packets)
      if (e >= end) return m;
    return fallback;
  }
};

struct KafkaSessions::Conn {
  TcpConnection tcp;
  ConnState state = ConnState::Probing;
  bool swapped = false;             // the reassembler's client is the broker
  uint64_t probed = 0;              // bytes seen while Probing
  // By kRequests / kResponses; while Probing, by reassembler side, each
  // hunting for a request.
  Stream dirs[2];
  PendingList pending;
  PendingList candidates[2];        // Probing: clean requests found in each side's bytes
  ApiList apis;                     // (api, version) of the requests it sent, latest last
  bool tls = false;                 // its bytes are TLS application data the TLS layer decrypted
};

// Moves (or adds) `v` to the end of `list`, which keeps its `max` latest.
static void note_api(std::vector<std::pair<int16_t, int16_t>>& list, std::pair<int16_t, int16_t> v, size_t max) {
  if (!list.empty() && list.back() == v) return;
  std::erase(list, v);
  if (list.size() >= max) list.erase(list.begin());
  list.push_back(v);
}

KafkaSessions::KafkaSessions(const ProgramSet& ps, SessionOptions opts, FrameHandler& out)
    : ps_(ps), decoder_(ps), opts_(std::move(opts)), out_(out) {
  decoder_.set_nested(opts_.nested);
  decoder_.set_compiled(opts_.compiled);
}

KafkaSessions::~KafkaSessions() = default;

KafkaSessions::Conn* KafkaSessions::conn(const TcpConnection& c) {
  if (last_ && last_->tcp.id == c.id) return last_;  // segments come in runs per connection
  auto it = conns_.find(c.id);
  if (it == conns_.end()) {
    on_open(c);
    it = conns_.find(c.id);
  }
  return last_ = it->second.get();
}

bool KafkaSessions::is_known_broker(const Endpoint& e) const {
  return std::find(known_brokers_.begin(), known_brokers_.end(), e) != known_brokers_.end();
}

// A connection to a Kafka port or to an endpoint already seen answering Kafka
// is Kafka from the start, oriented by that endpoint; any other waits for
// evidence in its bytes.
void KafkaSessions::on_open(const TcpConnection& t) {
  auto k = std::make_unique<Conn>();
  k->tcp = t;
  Conn& c = *k;
  conns_[t.id] = std::move(k);
  out_.on_connection_start(t);
  const bool server_is_broker = opts_.ports.count(t.server.port) || is_known_broker(t.server);
  const bool client_is_broker = opts_.ports.count(t.client.port) || is_known_broker(t.client);
  if (server_is_broker != client_is_broker) decide(c, true, client_is_broker, PacketMeta{});
  else if (!opts_.detect_other_ports && !server_is_broker) decide(c, false, false, PacketMeta{});
}

// Settles a Probing connection. Its streams were indexed by reassembler side
// while probing; from here on they are indexed by direction. A stream whose
// start was captured (SYN seen) begins Synced; others begin Hunting, since
// the capture may start inside a message, and what they hold is cut now.
void KafkaSessions::decide(Conn& c, bool kafka, bool swapped, const PacketMeta& meta) {
  if (!kafka) {
    c.state = ConnState::NotKafka;
    ++stats_.not_kafka;
    out_.on_verdict(c.tcp, false, c.tcp.client);
    for (Stream& st : c.dirs) st = Stream{};
    return;
  }
  c.state = ConnState::Kafka;
  c.swapped = swapped;
  if (swapped) std::swap(c.dirs[0], c.dirs[1]);
  ++stats_.kafka_connections;
  const Endpoint& client = swapped ? c.tcp.server : c.tcp.client;
  const Endpoint& server = swapped ? c.tcp.client : c.tcp.server;
  const bool new_broker = !is_known_broker(server);
  if (new_broker) known_brokers_.push_back(server);
  out_.on_verdict(c.tcp, true, client);
  c.candidates[0].clear();
  c.candidates[1].clear();
  for (Stream& st : c.dirs) {
    const bool from_start = c.tcp.saw_syn && (!st.seen || st.hunt_from == 0);
    st.sync = from_start ? Sync::Synced : Sync::Hunting;
    st.why = "the capture starts inside this connection";
    st.hunt.reset(st.buf_offset);
    st.confirm = Hunt{};
    st.at_hunt_start = st.buf_offset == st.hunt_from;
  }
  // Cut what was held: requests first, so that the responses held with them
  // find their requests (the time order between the two is not kept here).
  for (int dir : {kRequests, kResponses}) {
    if (!c.dirs[dir].buf.empty() && c.state != ConnState::NotKafka) run(c, dir, meta);
  }
  if (new_broker && !parked_.empty()) unpark();
}

void KafkaSessions::on_data(const TcpConnection& t, StreamSide side, uint64_t offset,
                            std::span<const uint8_t> bytes, const PacketMeta& meta) {
  Conn& c = *conn(t);
  const int s = side == StreamSide::FromClient ? 0 : 1;
  switch (c.state) {
    case ConnState::NotKafka:
      return;
    case ConnState::Probing: {
      Stream& st = c.dirs[s];
      start(st, offset, meta);
      if (st.buf.empty()) st.buf_offset = offset;
      st.buf.insert(st.buf.end(), bytes.begin(), bytes.end());
      st.held(offset + bytes.size(), meta);
      c.probed += bytes.size();
      probe(c, s, meta);
      return;
    }
    case ConnState::Kafka:
    case ConnState::SaslTokens:
      feed(c, s ^ (c.swapped ? 1 : 0), bytes, offset, meta);
      return;
  }
}

// A TLS connection the TLS layer decrypts is Kafka or not by its plaintext,
// like any other; one it cannot decrypt is not Kafka, with the reason as the
// note; a record that failed is a capture error that names it.
void KafkaSessions::on_tls(const TcpConnection& t, const TlsEvent& e, const PacketMeta& meta) {
  Conn& c = *conn(t);
  out_.on_tls(t, e);
  switch (e.kind) {
    case TlsEvent::Kind::Pending:
    case TlsEvent::Kind::Keyed:
      return;
    case TlsEvent::Kind::Decrypted:
      ++stats_.tls_connections;
      c.tls = true;
      return;
    case TlsEvent::Kind::NotDecrypted:
      ++stats_.tls_connections;
      ++stats_.tls_undecrypted;
      if (c.state == ConnState::NotKafka) return;
      if (c.state == ConnState::Probing) {
        decide(c, false, false, meta);
      } else {
        c.state = ConnState::NotKafka;
        ++stats_.not_kafka;
        --stats_.kafka_connections;
      }
      report(c, kRequests, 0, meta, {}, "stream is " + e.text, true);
      return;
    case TlsEvent::Kind::Failed: {
      ++stats_.tls_errors;
      const bool server = e.where.starts_with("server");
      const std::string where = "connection " + std::to_string(t.id) + " (" +
                                (server ? t.server : t.client).str() + " -> " + (server ? t.client : t.server).str() +
                                "), " + e.where;
      out_.on_capture_error(meta, where, e.text);
      return;
    }
  }
}

// The first byte of a stream sets where its hunt begins.
void KafkaSessions::start(Stream& s, uint64_t offset, const PacketMeta& meta) {
  if (s.seen) return;
  s.seen = true;
  s.first_packet = meta.number;
  s.buf_offset = s.hunt_from = offset;
  s.hunt.reset(offset);
  s.confirm.reset(offset);
}

// Evidence for a connection not known by port: requests that decode cleanly
// in one side's bytes are candidates; the side is the client once a response
// that decodes cleanly answers one of them from the other side, or at once
// when its request opens a connection whose SYN it sent. TLS at the start of
// either side, or a long run of bytes with no candidate, says it is not Kafka.
void KafkaSessions::probe(Conn& c, int side, const PacketMeta& meta) {
  if (by_known_broker(c, meta)) return;
  Stream& st = c.dirs[side];
  if (st.hunt_from == 0 && st.buf_offset == 0 && is_tls_record(st.buf)) {
    decide(c, false, false, meta);
    return;
  }
  for (;;) {
    const size_t found = hunt(st, st.hunt, true, c.pending, st.buf);
    if (found == SIZE_MAX) break;
    const uint64_t at = st.buf_offset + found;
    if (c.tcp.saw_syn && side == 0 && at == 0) {
      decide(c, true, false, meta);
      return;
    }
    PendingList& mine = c.candidates[side];
    if (mine.size() >= kMaxWaiting) mine.pop_front();
    mine.push_back({probe_frame_.correlation_id, probe_frame_.api_key, probe_frame_.api_version, response_hint(ps_, probe_frame_)});
    st.hunt.scan = at + 4 + static_cast<uint64_t>(size_at(st.buf, found));
    std::erase_if(st.hunt.waiting, [&](uint64_t w) { return w <= at; });
  }
  const PendingList& theirs = c.candidates[1 - side];
  if (theirs.empty()) {
    st.confirm.reset(st.buf_offset + st.buf.size());  // a response comes after its request
  } else if (hunt(st, st.confirm, false, theirs, st.buf) != SIZE_MAX) {
    decide(c, true, side == 0, meta);
    return;
  }
  if (c.probed > opts_.probe_limit) {
    decide(c, false, false, meta);
    return;
  }
  // Keep a bounded window. What falls out stays counted from hunt_from, and
  // is reported as skipped if the connection turns out to be Kafka.
  const uint64_t keep = std::min(st.hunt.keep_from(), st.confirm.keep_from());
  if (keep - st.buf_offset > opts_.probe_window) consume(st, static_cast<size_t>(keep - st.buf_offset));
}

// An endpoint that other connections showed to be a Kafka broker settles a
// connection that opened before anyone knew.
bool KafkaSessions::by_known_broker(Conn& c, const PacketMeta& meta) {
  const bool server = is_known_broker(c.tcp.server), client = is_known_broker(c.tcp.client);
  if (server == client) return false;
  decide(c, true, client, meta);
  return true;
}

// A connection that ends while Probing: the side with more request
// candidates is the client (the responses that would confirm them are not
// in the capture); with none it is not Kafka (on_close first parks it to
// wait for a broker, SessionOptions::wait_for_broker).
void KafkaSessions::settle(Conn& c) {
  if (by_known_broker(c, PacketMeta{})) return;
  const size_t n0 = c.candidates[0].size(), n1 = c.candidates[1].size();
  if (n0 == 0 && n1 == 0) {
    if (c.probed > 0) decide(c, false, false, PacketMeta{});
    else out_.on_verdict(c.tcp, false, c.tcp.client);  // no payload at all: nothing to count
    return;
  }
  decide(c, true, n1 > n0, c.dirs[n1 > n0 ? 1 : 0].last);
}

// Appends a direction's bytes and cuts messages. The common case (a stream in
// sync with nothing buffered) reads whole messages straight from the packet.
void KafkaSessions::feed(Conn& c, int dir, std::span<const uint8_t> bytes, uint64_t offset, const PacketMeta& meta) {
  Stream& s = c.dirs[dir];
  s.last = meta;
  if (bytes.empty()) return;
  start(s, offset, meta);
  const bool stream_start = s.sync == Sync::Synced ? offset == 0 : s.at_hunt_start && s.buf.empty() && offset == s.hunt_from;
  if (stream_start && is_tls_record(bytes)) {
    c.state = ConnState::NotKafka;
    ++stats_.not_kafka;
    --stats_.kafka_connections;
    report(c, dir, offset, meta, bytes, "stream is TLS-encrypted; not decoded", true);
    return;
  }
  if (s.buf.empty() && s.sync == Sync::Synced) {
    s.buf_offset = offset;
    while (bytes.size() >= 4) {
      const int32_t size = size_at(bytes, 0);
      if (size < 0 || static_cast<uint32_t>(size) > opts_.max_message) break;  // run() starts the hunt
      const size_t total = 4 + static_cast<size_t>(size);
      if (bytes.size() < total) break;
      message(c, dir, bytes.first(total), offset, meta);
      if (c.state == ConnState::NotKafka) return;
      bytes = bytes.subspan(total);
      offset += total;
      s.buf_offset = offset;
    }
    if (bytes.empty()) return;
  }
  if (s.buf.empty()) s.buf_offset = offset;
  s.buf.insert(s.buf.end(), bytes.begin(), bytes.end());
  s.held(offset + bytes.size(), meta);
  run(c, dir, meta);
}

// Cuts what is buffered into messages, hunting for a message start where the
// stream is not in sync. While Hunting, buf starts at hunt_from: the first
// byte that is in no message and has not been reported yet.
void KafkaSessions::run(Conn& c, int dir, const PacketMeta& meta) {
  Stream& s = c.dirs[dir];
  size_t pos = 0;
  for (;;) {
    if (s.sync == Sync::Synced) {
      std::span<const uint8_t> b = std::span<const uint8_t>(s.buf).subspan(pos);
      if (b.size() < 4) break;
      const int32_t size = size_at(b, 0);
      if (size < 0 || static_cast<uint32_t>(size) > opts_.max_message) {
        consume(s, pos);
        pos = 0;
        s.sync = Sync::Hunting;
        s.hunt_from = s.buf_offset;
        s.hunt.reset(s.hunt_from + 1);
        s.at_hunt_start = false;
        s.why = "size prefix " + std::to_string(size) + " is not a plausible Kafka message size";
        continue;
      }
      const size_t total = 4 + static_cast<size_t>(size);
      if (b.size() < total) break;
      message(c, dir, b.first(total), s.buf_offset + pos, s.completing(s.buf_offset + pos + total, meta));
      if (c.state == ConnState::NotKafka) return;
      pos += total;
      continue;
    }
    if (!resync(c, dir, meta)) break;
  }
  consume(s, pos);
}

void KafkaSessions::consume(Stream& s, size_t n) {
  s.buf.erase(s.buf.begin(), s.buf.begin() + static_cast<std::ptrdiff_t>(n));
  s.buf_offset += n;
}

// One step of a hunt: true when the stream is Synced again (at the start of
// buf), false when more bytes are needed.
bool KafkaSessions::resync(Conn& c, int dir, const PacketMeta& meta) {
  Stream& s = c.dirs[dir];
  std::span<const uint8_t> b = s.buf;
  Chain chain = Chain::Broken;
  if (s.at_hunt_start && s.buf_offset == s.hunt_from) {
    chain = chain_of(b, b.size());
    // One whole message is weak evidence (an int32 in the middle of a message
    // can equal the bytes left in its segment): it waits for what follows.
    if (chain == Chain::Whole) chain = chain_ids(b, dir == kRequests);
    if (chain == Chain::Whole) {
      s.sync = Sync::Synced;
      s.hunt.waiting.clear();
      return true;
    }
  }
  const size_t found = hunt(s, s.hunt, dir == kRequests, c.pending, b);
  if (found != SIZE_MAX) {
    // Sizes that chain from the hunt's start to the candidate frame messages too.
    if (!(chain != Chain::Broken && chain_of(b, found) == Chain::Whole)) {
      ++stats_.resyncs;
      skip(c, dir, s.hunt_from, s.buf_offset + found - s.hunt_from, meta,
           s.why + "; skipped to the next plausible message start");
      consume(s, found);
    }
    s.sync = Sync::Synced;
    s.hunt.waiting.clear();
    return true;
  }
  if (chain != Chain::Partial || b.size() > opts_.probe_window) s.at_hunt_start = false;
  // Nothing before the scan point or the first waiting candidate can start a
  // message: report it once the window is full, so that memory stays bounded.
  const size_t droppable = static_cast<size_t>(s.hunt.keep_from() - s.buf_offset);
  if (!s.at_hunt_start && droppable > opts_.probe_window) {
    skip(c, dir, s.hunt_from, s.buf_offset + droppable - s.hunt_from, meta, s.why + "; no plausible message start yet");
    consume(s, droppable);
    s.hunt_from = s.buf_offset;
  }
  return false;
}

// A hunt candidate not yet whole waits for its bytes. When kMaxWaiting wait
// already, the one that would end last gives way to one that ends sooner:
// record data can hold hundreds of false starts claiming a huge size, and
// they must not crowd out the real message behind them.
void KafkaSessions::wait_for(Hunt& h, std::span<const uint8_t> b, uint64_t base, size_t i) {
  auto end = [&](uint64_t at) { return at + 4 + static_cast<uint32_t>(size_at(b, static_cast<size_t>(at - base))); };
  const uint64_t at = base + i;
  if (h.waiting.size() >= kMaxWaiting) {
    auto last = std::max_element(h.waiting.begin(), h.waiting.end(), [&](uint64_t x, uint64_t y) { return end(x) < end(y); });
    if (end(*last) <= end(at)) return;
    h.waiting.erase(last);
  }
  h.waiting.push_back(at);  // the scan goes forward: still ascending
}

// Finds the first offset where a message plausibly starts: a request that
// decodes cleanly, or a response whose correlation id answers an outstanding
// request and that decodes cleanly. Candidates not yet whole wait in
// s.waiting (in stream order) while the scan goes on past them: a false one
// with a large size must not hold up the real messages behind it. Returns
// the index in `b`, or SIZE_MAX when there is none yet.
size_t KafkaSessions::hunt(Stream& s, Hunt& h, bool requests, const PendingList& pending,
                           std::span<const uint8_t> b) {
  auto whole_and_clean = [&](size_t i, size_t total) {
    std::span<const uint8_t> m = b.subspan(i, total);
    return requests ? clean_request(m) : clean_response(pending, m);
  };
  for (auto it = h.waiting.begin(); it != h.waiting.end();) {
    const size_t i = static_cast<size_t>(*it - s.buf_offset);
    const size_t total = 4 + static_cast<size_t>(size_at(b, i));
    if (b.size() - i < total) { ++it; continue; }
    if (whole_and_clean(i, total)) return i;
    it = h.waiting.erase(it);
  }
  const size_t need = requests ? kRequestHeadBytes : 8;
  size_t i = static_cast<size_t>(std::max(h.scan, s.buf_offset) - s.buf_offset);
  for (; i + need <= b.size(); ++i) {
    const int32_t size = size_at(b, i);
    if (size < 4 || static_cast<uint32_t>(size) > opts_.max_message) continue;
    if (requests ? !plausible_request(ps_, b.subspan(i)) : !find(pending, size_at(b, i + 4))) continue;
    const size_t total = 4 + static_cast<size_t>(size);
    if (b.size() - i < total) {
      wait_for(h, b, s.buf_offset, i);
      continue;
    }
    if (whole_and_clean(i, total)) {
      h.scan = s.buf_offset + i;
      return i;
    }
  }
  h.scan = s.buf_offset + i;
  return SIZE_MAX;
}

// Whether b[0, end) is whole messages back to back (sizes that chain exactly
// to `end`): evidence that b starts at a message boundary even when nothing
// else (a known request, a matching correlation id) says so. Partial: the
// sizes are sane so far but the last message is not complete yet.
KafkaSessions::Chain KafkaSessions::chain_of(std::span<const uint8_t> b, size_t end) const {
  size_t i = 0;
  while (i + 4 <= end) {
    const int32_t size = size_at(b, i);
    if (size < 4 || static_cast<uint32_t>(size) > opts_.max_message) return Chain::Broken;
    i += 4 + static_cast<size_t>(size);
  }
  if (i == end) return i > 0 ? Chain::Whole : Chain::Partial;
  if (end < b.size()) return Chain::Broken;  // overshoots the candidate
  return Chain::Partial;
}

// Sizes that chain exactly to the end of b (chain_of is Whole) mark a message
// boundary at b[0] when they make two messages or more whose correlation ids
// differ from one to the next by at least 1 and at most kIdStep, as a
// client's do (not always rising: a Java client numbers a request when it
// queues it, and an ApiVersions sent on connecting can overtake it). Whole:
// confirmed; Partial: one message alone, weak evidence (an int32 inside a
// message can equal the bytes left in its segment), which waits for more;
// Broken: ids that no client would send.
KafkaSessions::Chain KafkaSessions::chain_ids(std::span<const uint8_t> b, bool requests) {
  constexpr int64_t kIdStep = 1024;
  const size_t id_at = requests ? 8 : 4;  // after the api key and version in a request
  size_t n = 0;
  int64_t last = 0;
  for (size_t i = 0; i + 4 <= b.size(); i += 4 + static_cast<size_t>(size_at(b, i))) {
    if (static_cast<size_t>(size_at(b, i)) < id_at) return Chain::Broken;
    const int64_t id = size_at(b, i + id_at);
    if (n++ > 0 && (id == last || std::abs(id - last) > kIdStep)) return Chain::Broken;
    last = id;
  }
  return n >= 2 ? Chain::Whole : Chain::Partial;
}

// A lone whole response held at the start of a direction (see chain_ids),
// captured before the request `request` (in packet `meta`), is settled by it
// when it decodes cleanly with that request's api and version (a Fetch
// answered before the next Fetch, a heartbeat before the next heartbeat). It
// is decoded before the request, as the capture has them.
void KafkaSessions::confirm_lone_response(Conn& c, std::span<const uint8_t> request, const PacketMeta& meta) {
  Stream& r = c.dirs[kResponses];
  if (r.sync != Sync::Hunting || !r.at_hunt_start || r.buf_offset != r.hunt_from || r.buf.size() < 8) return;
  if (r.packets.empty() || r.packets.back().second.number >= meta.number) return;  // not before the request
  if (size_at(r.buf, 4) == size_at(request, 8)) return;  // its answer: matched as usual
  if (chain_of(r.buf, r.buf.size()) != Chain::Whole || chain_ids(r.buf, false) != Chain::Partial) return;
  const auto api = static_cast<int16_t>(wire::load_be16(request.data() + 4));
  const auto version = static_cast<int16_t>(wire::load_be16(request.data() + 6));
  if (!ps_.find(api, version, Direction::Response)) return;
  decoder_.decode_response(r.buf, api, version, probe_frame_);
  if (!probe_frame_.ok()) return;
  r.sync = Sync::Synced;
  r.hunt.waiting.clear();
  run(c, kResponses, meta);
}

bool KafkaSessions::clean_request(std::span<const uint8_t> msg) {
  decoder_.decode_request(msg, probe_frame_);
  return probe_frame_.ok();
}

bool KafkaSessions::clean_response(const PendingList& pending, std::span<const uint8_t> msg) {
  const Pending* p = find(pending, size_at(msg, 4));
  if (!p) return false;
  decoder_.decode_response(msg, p->api, p->version, probe_frame_);
  return probe_frame_.ok();
}

FrameContext KafkaSessions::context(const Conn& c, int dir, uint64_t offset, const PacketMeta& meta, bool numbered) {
  FrameContext ctx;
  if (numbered) ctx.number = ++frames_;
  ctx.packet = meta;
  ctx.conn = &c.tcp;
  const Endpoint& client = c.swapped ? c.tcp.server : c.tcp.client;
  const Endpoint& server = c.swapped ? c.tcp.client : c.tcp.server;
  ctx.src = dir == kRequests ? client : server;
  ctx.dst = dir == kRequests ? server : client;
  ctx.stream_offset = offset;
  ctx.tls = c.tls;
  return ctx;
}

void KafkaSessions::message(Conn& c, int dir, std::span<const uint8_t> msg, uint64_t offset, const PacketMeta& meta) {
  if (c.state == ConnState::SaslTokens) {
    // Raw tokens until the client sends a request that decodes cleanly and
    // the broker answers requests again.
    const bool kafka = dir == kRequests ? clean_request(msg) : (msg.size() >= 8 && find(c.pending, size_at(msg, 4)) != nullptr);
    if (dir == kRequests && kafka) c.state = ConnState::Kafka;
    if (!kafka) {
      ++stats_.sasl_tokens;
      FrameContext ctx = context(c, dir, offset, meta);
      ctx.not_kafka = true;
      ctx.note = "SASL token after SaslHandshake v0";
      frame_.clear();
      frame_.message = msg;
      frame_.direction = dir == kRequests ? Direction::Request : Direction::Response;
      out_.on_frame(ctx, frame_);
      return;
    }
  }
  if (dir == kRequests && msg.size() >= 12) confirm_lone_response(c, msg, meta);
  FrameContext ctx = context(c, dir, offset, meta);
  if (dir == kResponses) {
    response(c, ctx, msg);
    return;
  }
  const ResponseHint hint = decode_request(msg, false);
  if (opts_.guess && frame_.api_key >= 0 && frame_.ok()) {  // what guess() tries first
    const std::pair<int16_t, int16_t> api{frame_.api_key, frame_.api_version};
    note_api(c.apis, api, 16);
    note_api(seen_apis_, api, 256);
  }
  if (frame_.api_key >= 0 && msg.size() >= 12) {
    const Node* acks = frame_.api_key == kProduce ? find_field(frame_, ps_, frame_.body, "Acks") : nullptr;
    if (!(acks && acks->v.i == 0)) {  // acks=0 produce is never answered
      if (c.pending.size() >= opts_.max_pending) {
        c.pending.pop_front();
        ++stats_.unanswered;
      }
      c.pending.push_back({frame_.correlation_id, frame_.api_key, frame_.api_version, hint});
    }
  }
  out_.on_frame(ctx, frame_);
}

// A request into frame_; returns what its response's decoding needs. A
// SyncGroup request before v5 of a consumer group is decoded again with its
// assignments read as consumer protocol payloads (GroupProtocols).
ResponseHint KafkaSessions::decode_request(std::span<const uint8_t> msg, bool cut) {
  decoder_.decode_request(msg, frame_, cut);
  const ResponseHint hint = groups_.learn(ps_, frame_);
  if (GroupProtocols::redecode(frame_, hint)) decoder_.decode_request(msg, frame_, cut, &hint);
  return hint;
}

void KafkaSessions::response(Conn& c, FrameContext& ctx, std::span<const uint8_t> msg) {
  const int32_t corr = msg.size() >= 8 ? size_at(msg, 4) : 0;
  auto it = pending_of(c, corr);
  if (it != c.pending.end()) {
    const Pending p = *it;
    answered(c, it);
    decoder_.decode_response(msg, p.api, p.version, frame_, false, p.hint);
    if (p.api == kSaslHandshake && p.version == 0 && frame_.ok()) {
      const Node* err = find_field(frame_, ps_, frame_.body, "ErrorCode");
      if (err && err->v.i == 0) c.state = ConnState::SaslTokens;
    }
    out_.on_frame(ctx, frame_);
    return;
  }
  ctx.unmatched = true;
  if (opts_.guess && guess(c, msg)) {
    frame_.guessed = true;
    out_.on_frame(ctx, frame_);
    return;
  }
  frame_.clear();
  frame_.message = msg;
  frame_.direction = Direction::Response;
  frame_.correlation_id = corr;
  out_.on_frame(ctx, frame_);
}

// --guess: a response layout that decodes `msg` cleanly into frame_. Many
// responses fit several layouts, so the likeliest are tried first: the
// (api, version) of requests this connection sent, then of requests seen
// anywhere in the capture, latest first; then every layout, newest first.
bool KafkaSessions::guess(const Conn& c, std::span<const uint8_t> msg) {
  auto fits = [&](int16_t api, int16_t version) {
    if (!ps_.find(api, version, Direction::Response)) return false;
    decoder_.decode_response(msg, api, version, frame_);
    return frame_.ok();
  };
  for (auto it = c.apis.rbegin(); it != c.apis.rend(); ++it)
    if (fits(it->first, it->second)) return true;
  for (auto it = seen_apis_.rbegin(); it != seen_apis_.rend(); ++it)
    if (fits(it->first, it->second)) return true;
  const auto& all = ps_.messages();
  for (auto m = all.rbegin(); m != all.rend(); ++m) {
    if (m->direction != Direction::Response || ps_.find(m->api_key, m->version, Direction::Response) != &*m) continue;
    if (fits(m->api_key, m->version)) return true;
  }
  return false;
}

KafkaSessions::PendingList::iterator KafkaSessions::pending_of(Conn& c, int32_t corr) {
  return std::find_if(c.pending.begin(), c.pending.end(), [&](const Pending& p) { return p.corr == corr; });
}

// Responses come in request order: requests older than the one answered
// were never answered.
void KafkaSessions::answered(Conn& c, PendingList::iterator it) {
  stats_.unanswered += static_cast<uint64_t>(it - c.pending.begin());
  c.pending.erase(c.pending.begin(), it + 1);
}

void KafkaSessions::skip(Conn& c, int dir, uint64_t offset, uint64_t length, const PacketMeta& meta,
                         std::string reason) {
  if (length == 0) return;
  stats_.skipped_bytes += length;
  FrameContext ctx = context(c, dir, offset, meta, false);
  out_.on_skip(ctx, length, reason);
}

void KafkaSessions::report(Conn& c, int dir, uint64_t offset, const PacketMeta& meta, std::span<const uint8_t> bytes,
                           std::string reason, bool not_kafka) {
  FrameContext ctx = context(c, dir, offset, meta);
  ctx.not_kafka = not_kafka;
  frame_.clear();
  frame_.message = bytes;
  frame_.direction = dir == kRequests ? Direction::Request : Direction::Response;
  if (not_kafka) ctx.note = reason;
  else frame_.fail(0, std::move(reason));
  out_.on_frame(ctx, frame_);
}

// A message the capture does not finish (a gap or the end): decoded as far as
// it goes, a response with the api and version of its request.
void KafkaSessions::truncated(Conn& c, int dir, const PacketMeta& meta, const std::string& why) {
  Stream& s = c.dirs[dir];
  if (s.buf.empty()) return;
  if (s.sync == Sync::Hunting && s.at_hunt_start && s.buf_offset == s.hunt_from &&
      chain_of(s.buf, s.buf.size()) == Chain::Whole && chain_ids(s.buf, dir == kRequests) != Chain::Broken) {
    // A lone whole message at the start of what was captured: nothing came
    // after it to refute it, and it is taken as one (resync waited for more).
    s.sync = Sync::Synced;
    s.hunt.waiting.clear();
    run(c, dir, meta);
    if (s.buf.empty()) return;
  }
  if (s.sync == Sync::Hunting) {
    const uint64_t end = s.buf_offset + s.buf.size();
    if (end > s.hunt_from) skip(c, dir, s.hunt_from, end - s.hunt_from, meta, s.why + "; " + why);
    s.buf.clear();
    return;
  }
  if (s.buf.size() < 4) {
    report(c, dir, s.buf_offset, meta, s.buf,
           why + " inside a size prefix (" + std::to_string(s.buf.size()) + " of 4 bytes)", false);
    s.buf.clear();
    return;
  }
  FrameContext ctx = context(c, dir, s.buf_offset, meta);
  if (dir == kRequests) {
    decode_request(s.buf, true);
  } else if (auto p = s.buf.size() >= 8 ? pending_of(c, size_at(s.buf, 4)) : c.pending.end(); p != c.pending.end()) {
    decoder_.decode_response(s.buf, p->api, p->version, frame_, true, p->hint);
    answered(c, p);
  } else {
    ctx.unmatched = true;
    frame_.clear();
    frame_.message = s.buf;
    frame_.direction = Direction::Response;
    frame_.correlation_id = s.buf.size() >= 8 ? size_at(s.buf, 4) : 0;
    frame_.fail(0, "message truncated: size prefix says " + std::to_string(size_at(s.buf, 0)) +
                       " bytes, the capture has " + std::to_string(s.buf.size() - 4));
  }
  if (!frame_.errors.empty()) frame_.errors.front().reason += " (" + why + ")";
  out_.on_frame(ctx, frame_);
  s.buf.clear();
}

// Lost bytes: the message they cut is reported as far as it goes, and the
// direction hunts for the next message start after them.
void KafkaSessions::on_gap(const TcpConnection& t, StreamSide side, uint64_t offset, uint64_t length,
                           const PacketMeta& meta) {
  Conn& c = *conn(t);
  const int s = side == StreamSide::FromClient ? 0 : 1;
  if (c.state == ConnState::Probing) {
    // Start over after the gap: bytes before it cannot be framed with what
    // follows. They stay counted from hunt_from.
    Stream& st = c.dirs[s];
    st.buf.clear();
    st.buf_offset = offset + length;
    st.hunt.reset(st.buf_offset);
    st.confirm.reset(st.buf_offset);
    return;
  }
  if (c.state == ConnState::NotKafka) return;
  const int dir = s ^ (c.swapped ? 1 : 0);
  Stream& d = c.dirs[dir];
  stats_.lost_bytes += length;
  truncated(c, dir, meta, std::to_string(length) + " bytes at stream offset " + std::to_string(offset) +
                              " are missing from the capture");
  FrameContext ctx = context(c, dir, offset, meta, false);
  out_.on_skip(ctx, length, "missing from the capture; decoding resumes at the next plausible message start");
  d.sync = Sync::Hunting;
  d.buf.clear();
  d.buf_offset = d.hunt_from = offset + length;
  d.hunt.reset(d.buf_offset);
  d.at_hunt_start = true;
  d.why = "after bytes missing from the capture";
}

void KafkaSessions::on_close(const TcpConnection& t) {
  auto it = conns_.find(t.id);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> c = std::move(it->second);
  conns_.erase(it);
  if (last_ == c.get()) last_ = nullptr;
  if (opts_.wait_for_broker && no_evidence(*c)) {
    park(std::move(c));
    return;
  }
  if (c->state == ConnState::Probing) settle(*c);
  finish(*c);
}

// Probing with payload, no request candidate on either side and no known
// broker at either end: settle() would call it not Kafka.
bool KafkaSessions::no_evidence(const Conn& c) const {
  return c.state == ConnState::Probing && c.probed > 0 && c.candidates[0].empty() && c.candidates[1].empty() &&
         is_known_broker(c.tcp.server) == is_known_broker(c.tcp.client);
}

// The end of a settled connection: what its streams still hold is reported.
void KafkaSessions::finish(Conn& c) {
  if (c.state == ConnState::Kafka || c.state == ConnState::SaslTokens) {
    for (int dir = 0; dir < 2; ++dir) truncated(c, dir, c.dirs[dir].last, "the capture ends here");
    stats_.unanswered += c.pending.size();
  }
  out_.on_connection_end(c.tcp);
}

// An ended connection waits for evidence from others. Memory stays bounded:
// past 64 connections or 16 MiB held, the oldest is settled as it is.
void KafkaSessions::park(std::unique_ptr<Conn> c) {
  constexpr size_t kMaxParked = 64;
  constexpr size_t kMaxParkedBytes = 16u << 20;
  parked_.push_back(std::move(c));
  auto held = [&] {
    size_t n = 0;
    for (const auto& p : parked_) n += p->dirs[0].buf.size() + p->dirs[1].buf.size();
    return n;
  };
  while (parked_.size() > kMaxParked || held() > kMaxParkedBytes) settle_oldest_parked();
}

void KafkaSessions::settle_oldest_parked() {
  std::unique_ptr<Conn> c = std::move(parked_.front());
  parked_.pop_front();
  settle(*c);
  finish(*c);
}

// A broker became known: the parked connections it settles are decoded now,
// as of their own last packet, in the order they ended.
void KafkaSessions::unpark() {
  std::vector<std::unique_ptr<Conn>> ready;
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (is_known_broker((*it)->tcp.server) != is_known_broker((*it)->tcp.client)) {
      ready.push_back(std::move(*it));
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& c : ready) {
    const PacketMeta& a = c->dirs[0].last;
    const PacketMeta& b = c->dirs[1].last;
    by_known_broker(*c, a.number >= b.number ? a : b);
    finish(*c);
  }
}

void KafkaSessions::on_end() {
  while (!parked_.empty()) settle_oldest_parked();
}

void KafkaSessions::on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) {
  out_.on_capture_error(meta, where, reason);
}

}  // namespace kwire
