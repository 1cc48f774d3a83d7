#include "recorder/tcp_reassembler.hpp"

#include <algorithm>
#include <cstring>

namespace kwire {
namespace {

// A closed connection is remembered (so that its late ACKs and retransmissions
// do not open a new one) for this long in capture time, and at most this many
// of them are kept.
constexpr int64_t kClosedLingerSec = 60;
constexpr size_t kMaxClosed = 16384;
// Spare out-of-order buffers kept for reuse.
constexpr size_t kMaxPooledBuffers = 1024;
// Payload this close past a finished stream's end continues it; farther (or
// before its start) it belongs to a new connection on the same 4-tuple,
// whose initial sequence number is random.
constexpr int64_t kSameStreamWindow = 16 << 20;

constexpr size_t index(StreamSide s) { return static_cast<size_t>(s); }
constexpr StreamSide other(StreamSide s) {
  return s == StreamSide::FromClient ? StreamSide::FromServer : StreamSide::FromClient;
}

// An endpoint's address as two words, ordered inline (memcmp on the 16-byte
// arrays was a library call per packet).
struct AddrWords {
  uint64_t hi, lo;
};
inline AddrWords words(const Endpoint& e) {
  uint64_t w[2];
  std::memcpy(w, e.addr.data(), 16);
  return {w[0], w[1]};
}

// Any strict order serves: it only picks which endpoint a Key holds first.
bool endpoint_less(const Endpoint& a, const Endpoint& b) {
  const AddrWords x = words(a), y = words(b);
  if (x.hi != y.hi) return x.hi < y.hi;
  if (x.lo != y.lo) return x.lo < y.lo;
  if (a.port != b.port) return a.port < b.port;
  return a.v6 < b.v6;
}


inline uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

// Stream offset of sequence number `seq` in a started direction. Differences
// are taken modulo 2^32, so wraparound is handled; the result may be negative
// for bytes before the start of the stream.
inline int64_t offset_of(uint64_t next_off, uint32_t next_seq, uint32_t seq) {
  return static_cast<int64_t>(next_off) + static_cast<int32_t>(seq - next_seq);
}

}  // namespace

size_t TcpReassembler::KeyHash::operator()(const Key& k) const {
  uint64_t w[4];
  std::memcpy(w, k.lo.addr.data(), 16);
  std::memcpy(w + 2, k.hi.addr.data(), 16);
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (uint64_t x : w) h = mix(h, x);
  h = mix(h, uint64_t{k.lo.port} << 32 | uint64_t{k.hi.port} << 16 | uint64_t{k.lo.v6});
  return static_cast<size_t>(h);
}

TcpReassembler::TcpReassembler(StreamSink& sink, size_t max_buffered_per_direction)
    : sink_(sink), max_held_(max_buffered_per_direction) {}

TcpReassembler::~TcpReassembler() = default;

TcpReassembler::Key TcpReassembler::make_key(const Endpoint& a, const Endpoint& b) {
  return endpoint_less(a, b) ? Key{a, b} : Key{b, a};
}

size_t TcpReassembler::open_connections() const {
  return static_cast<size_t>(std::count_if(table_.begin(), table_.end(),
                                           [](const auto& kv) { return !kv.second.closed; }));
}

void TcpReassembler::add(const TcpSegment& s, const PacketMeta& meta) {
  expire_closed(meta);
  const bool syn = s.flags & kTcpSyn;
  const bool ack = s.flags & kTcpAck;
  const bool rst = s.flags & kTcpRst;
  const bool fin = s.flags & kTcpFin;

  const Key key = make_key(s.src, s.dst);
  Conn* c = lookup(key);

  if (c && !c->closed && syn && !rst) {
    // A SYN on an open connection is either a retransmission of the one that
    // opened it, or the 4-tuple was reused and the end of the old one missed.
    const StreamSide side = s.src == c->info.client ? StreamSide::FromClient : StreamSide::FromServer;
    const Direction& d = c->dir[index(side)];
    bool same;
    if (!ack) {
      same = c->info.saw_syn && side == StreamSide::FromClient && d.syn && d.syn_seq == s.seq;
    } else {
      same = c->info.saw_syn && side == StreamSide::FromServer && (!d.syn || d.syn_seq == s.seq);
    }
    if (!same) close(key, *c);
  }
  if (c && !syn && !rst && s.payload_length > 0 && (c->closed || finished(*c, s))) {
    switch (past_end(*c, s)) {
      case PastEnd::No:
        break;
      case PastEnd::Near:
        // The same stream going on after its FIN or RST: never delivered, so say so.
        sink_.on_error(meta, "packet " + std::to_string(meta.number),
                       std::to_string(s.payload_length) + " bytes after the end of TCP connection " +
                           c->info.client.str() + " - " + c->info.server.str() + " (FIN or RST seen) are not decoded");
        return;
      case PastEnd::Far:
        // Sequence numbers of another stream: the 4-tuple carries a new
        // connection whose SYN was not captured.
        if (!c->closed) close(key, *c);
        open(*c, s, meta);
        break;
    }
  }
  if (c && c->closed && !(syn && !rst)) return;  // late packet of a finished connection
  if (!c || c->closed) {
    // Only a SYN or payload tells which side is the client.
    if (rst || (!syn && s.payload_length == 0)) return;
    if (!c) {
      c = &table_[key];
      last_key_ = key;
      last_ = c;
    }
    open(*c, s, meta);
  }

  Conn& conn = *c;
  conn.last = meta;
  const StreamSide side = s.src == conn.info.client ? StreamSide::FromClient : StreamSide::FromServer;
  if (rst) {
    close(key, conn);
    return;
  }
  if (ack && !syn) acknowledged(conn, other(side), s.ack, meta);
  Direction& d = conn.dir[index(side)];
  uint32_t data_seq = s.seq;
  if (syn) {
    if (!d.syn) {
      d.syn = true;
      d.syn_seq = s.seq;
    }
    if (!d.started) start(d, s.seq + 1);
    data_seq = s.seq + 1;
    if (ack) {
      // A SYN-ACK also tells where the client's stream starts.
      Direction& o = conn.dir[index(other(side))];
      if (!o.syn) {
        o.syn = true;
        o.syn_seq = s.ack - 1;
      }
      if (!o.started) start(o, s.ack);
    }
  }
  if (s.payload_length > 0) segment(conn, side, data_seq, s.payload, s.payload_length, meta);
  if (fin) {
    this->fin(conn, side, data_seq + s.payload_length);
    if (conn.dir[0].fin && conn.dir[1].fin) close(key, conn);
  }
}

bool TcpReassembler::finished(const Conn& c, const TcpSegment& s) {
  const StreamSide side = s.src == c.info.client ? StreamSide::FromClient : StreamSide::FromServer;
  return c.dir[index(side)].fin;
}

// Where a segment lies against what its direction delivered up to its FIN
// (or the RST): inside (a retransmission), just past it (the same stream,
// wrongly going on), or far from it (another stream's sequence numbers).
TcpReassembler::PastEnd TcpReassembler::past_end(const Conn& c, const TcpSegment& s) {
  const StreamSide side = s.src == c.info.client ? StreamSide::FromClient : StreamSide::FromServer;
  const Direction& d = c.dir[index(side)];
  if (!d.started) return PastEnd::Far;
  const int64_t off = offset_of(d.next_off, d.next_seq, s.seq);
  const int64_t end = off + static_cast<int64_t>(s.payload_length);
  const int64_t limit = static_cast<int64_t>(d.fin ? d.fin_off : d.next_off) + 1;  // a FIN takes a sequence number
  if (off >= 0 && end <= limit) return PastEnd::No;
  if (off >= 0 && off <= limit + kSameStreamWindow) return PastEnd::Near;
  return PastEnd::Far;
}

int64_t TcpReassembler::stream_offset(const TcpSegment& s) const {
  auto it = table_.find(make_key(s.src, s.dst));
  if (it == table_.end()) return -1;
  const Conn& c = it->second;
  const StreamSide side = s.src == c.info.client ? StreamSide::FromClient : StreamSide::FromServer;
  const Direction& d = c.dir[index(side)];
  if (!d.started) return -1;
  const uint32_t data_seq = (s.flags & kTcpSyn) ? s.seq + 1 : s.seq;
  return offset_of(d.next_off, d.next_seq, data_seq);
}

TcpReassembler::Conn& TcpReassembler::open(Conn& slot, const TcpSegment& s, const PacketMeta& meta) {
  slot = Conn{};
  slot.info.id = next_id_++;
  const bool syn = s.flags & kTcpSyn;
  if (syn && (s.flags & kTcpAck)) {  // SYN-ACK: its sender is the server
    slot.info.client = s.dst;
    slot.info.server = s.src;
  } else {
    slot.info.client = s.src;
    slot.info.server = s.dst;
  }
  slot.info.saw_syn = syn;
  slot.last = meta;
  sink_.on_open(slot.info);
  return slot;
}

void TcpReassembler::start(Direction& d, uint32_t seq) {
  d.started = true;
  d.next_seq = seq;
  d.next_off = 0;
}

void TcpReassembler::segment(Conn& c, StreamSide side, uint32_t seq, std::span<const uint8_t> captured,
                             uint64_t length, const PacketMeta& meta) {
  Direction& d = c.dir[index(side)];
  if (!d.started) start(d, seq);
  const int64_t off = offset_of(d.next_off, d.next_seq, seq);
  int64_t end = off + static_cast<int64_t>(length);
  if (d.fin) end = std::min(end, static_cast<int64_t>(d.fin_off));
  if (end <= static_cast<int64_t>(d.next_off)) return;  // retransmission of delivered bytes
  if (off <= static_cast<int64_t>(d.next_off)) {
    emit(c, side, static_cast<uint64_t>(off), captured, static_cast<uint64_t>(end), meta);
    drain(c, side, meta);
    return;
  }
  hold(d, static_cast<uint64_t>(off), captured, static_cast<uint64_t>(end));
  while (d.held_bytes > max_held_ && !d.held.empty()) release_lowest(c, side, meta);
}

void TcpReassembler::fin(Conn& c, StreamSide side, uint32_t seq) {
  Direction& d = c.dir[index(side)];
  if (d.fin) return;  // a retransmitted FIN
  if (!d.started) start(d, seq);
  d.fin = true;
  d.fin_off = static_cast<uint64_t>(std::max(offset_of(d.next_off, d.next_seq, seq),
                                             static_cast<int64_t>(d.next_off)));
}

// Delivers [next_off, end) from a piece starting at `off` <= next_off whose
// first data.size() bytes were captured; the rest is a gap.
void TcpReassembler::emit(Conn& c, StreamSide side, uint64_t off, std::span<const uint8_t> data, uint64_t end,
                          const PacketMeta& meta) {
  Direction& d = c.dir[index(side)];
  const uint64_t have_end = off + std::min<uint64_t>(data.size(), end - off);
  if (d.next_off < have_end) {
    const uint64_t n = have_end - d.next_off;
    sink_.on_data(c.info, side, d.next_off, data.subspan(d.next_off - off, n), meta);
    d.next_off += n;
    d.next_seq += static_cast<uint32_t>(n);
  }
  if (d.next_off < end) gap_to(c, side, end, meta);
}

void TcpReassembler::gap_to(Conn& c, StreamSide side, uint64_t off, const PacketMeta& meta) {
  Direction& d = c.dir[index(side)];
  if (d.fin) off = std::min(off, d.fin_off);
  if (off <= d.next_off) return;
  const uint64_t n = off - d.next_off;
  sink_.on_gap(c.info, side, d.next_off, n, meta);
  d.next_off += n;
  d.next_seq += static_cast<uint32_t>(n);
}

// Delivers the held pieces that have become contiguous.
void TcpReassembler::drain(Conn& c, StreamSide side, const PacketMeta& meta) {
  Direction& d = c.dir[index(side)];
  while (!d.held.empty() && d.held.back().off <= d.next_off) {
    Held h = std::move(d.held.back());
    d.held.pop_back();
    d.held_bytes -= h.data.size();
    uint64_t end = h.off + h.len;
    if (d.fin) end = std::min(end, d.fin_off);
    if (end > d.next_off) emit(c, side, h.off, h.data, end, meta);
    recycle(std::move(h.data));
  }
}

// Gives up on the hole before the lowest held piece and delivers what follows.
void TcpReassembler::release_lowest(Conn& c, StreamSide side, const PacketMeta& meta) {
  Direction& d = c.dir[index(side)];
  gap_to(c, side, d.held.back().off, meta);
  if (d.held.back().off > d.next_off) {  // lies beyond the FIN: can never be delivered
    d.held_bytes -= d.held.back().data.size();
    recycle(std::move(d.held.back().data));
    d.held.pop_back();
    return;
  }
  drain(c, side, meta);
}

// The peer acknowledged the bytes before `ack`: they reached it, so a hole
// among them will never be captured. Give it up now instead of holding what
// follows until the buffer fills or the connection ends (and, meanwhile,
// delivering the answers before the requests).
void TcpReassembler::acknowledged(Conn& c, StreamSide side, uint32_t ack, const PacketMeta& meta) {
  Direction& d = c.dir[index(side)];
  if (!d.started || d.held.empty()) return;
  const int64_t ack_off = offset_of(d.next_off, d.next_seq, ack);
  while (!d.held.empty() && d.held.back().off > d.next_off && static_cast<int64_t>(d.held.back().off) <= ack_off)
    release_lowest(c, side, meta);
}

void TcpReassembler::hold(Direction& d, uint64_t off, std::span<const uint8_t> data, uint64_t end) {
  const uint64_t len = end - off;
  const size_t cap = static_cast<size_t>(std::min<uint64_t>(data.size(), len));
  // `held` is descending by offset; insert after the pieces starting at or after `off`.
  auto pos = std::partition_point(d.held.begin(), d.held.end(), [&](const Held& h) { return h.off >= off; });
  auto covers = [&](const Held& h) {
    return h.off <= off && h.off + h.len >= end && h.off + h.data.size() >= off + cap;
  };
  if (pos != d.held.begin() && covers(*std::prev(pos))) return;  // same start, already held
  if (pos != d.held.end() && covers(*pos)) return;               // inside the piece before it
  Held h{off, len, take_buffer()};
  h.data.assign(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(cap));
  d.held_bytes += cap;
  d.held.insert(pos, std::move(h));
}

void TcpReassembler::flush(Conn& c, StreamSide side, const PacketMeta& meta) {
  Direction& d = c.dir[index(side)];
  while (!d.held.empty()) release_lowest(c, side, meta);
  if (d.fin) gap_to(c, side, d.fin_off, meta);
  std::vector<Held>().swap(d.held);
}

void TcpReassembler::close(const Key& key, Conn& c) {
  flush(c, StreamSide::FromClient, c.last);
  flush(c, StreamSide::FromServer, c.last);
  c.closed = true;
  sink_.on_close(c.info);
  closed_.push_back(Closed{key, c.info.id, c.last.ts_sec});
}

// Packets come in runs on one connection (a request and its response, a
// message over several segments): the last connection found is checked
// before the table.
TcpReassembler::Conn* TcpReassembler::lookup(const Key& key) {
  if (last_ && last_key_ == key) return last_;
  auto it = table_.find(key);
  if (it == table_.end()) return nullptr;
  last_key_ = key;
  last_ = &it->second;
  return last_;
}

void TcpReassembler::expire_closed(const PacketMeta& meta) {
  while (!closed_.empty()) {
    const Closed& f = closed_.front();
    if (closed_.size() <= kMaxClosed && meta.ts_sec - f.ts_sec < kClosedLingerSec) break;
    auto it = table_.find(f.key);
    if (it != table_.end() && it->second.closed && it->second.info.id == f.id) {
      if (last_ == &it->second) last_ = nullptr;
      table_.erase(it);
    }
    closed_.pop_front();
  }
}

void TcpReassembler::close_all() {
  std::vector<std::pair<uint32_t, Key>> open;
  for (const auto& [key, c] : table_) {
    if (!c.closed) open.emplace_back(c.info.id, key);
  }
  std::sort(open.begin(), open.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, key] : open) close(key, table_.find(key)->second);
  table_.clear();
  last_ = nullptr;
  closed_.clear();
  sink_.on_end();
}

std::vector<uint8_t> TcpReassembler::take_buffer() {
  if (pool_.empty()) return {};
  std::vector<uint8_t> b = std::move(pool_.back());
  pool_.pop_back();
  return b;
}

void TcpReassembler::recycle(std::vector<uint8_t>&& buf) {
  if (buf.capacity() == 0 || pool_.size() >= kMaxPooledBuffers) return;
  buf.clear();
  pool_.push_back(std::move(buf));
}

}  // namespace kwire
