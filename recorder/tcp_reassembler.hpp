// TCP reassembly: turns decoded segments into per-direction byte streams for a
// StreamSink. Each stream byte is delivered exactly once, in order; bytes that
// never show up are reported as gaps. Memory is bounded by the open
// connections and their out-of-order buffers.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "recorder/capture.hpp"
#include "recorder/packet.hpp"

namespace kwire {

class TcpReassembler {
 public:
  // `max_buffered_per_direction`: out-of-order bytes held back per direction
  // before the missing bytes are given up as a gap.
  TcpReassembler(StreamSink& sink, size_t max_buffered_per_direction);
  ~TcpReassembler();
  TcpReassembler(const TcpReassembler&) = delete;
  TcpReassembler& operator=(const TcpReassembler&) = delete;

  // One TCP segment. `meta` is the packet's; bytes released by this segment
  // (including buffered ones it unblocks) are delivered with it.
  void add(const TcpSegment& seg, const PacketMeta& meta);

  // End of capture: flushes and closes every open connection, in order of id.
  void close_all();

  uint64_t connections() const { return next_id_ - 1; }
  // The stream offset of `seg`'s first payload byte in its direction, as
  // StreamSink saw (or will see) it; -1 when its connection or direction is
  // not known. For recorders that edit bytes of a stream in the packets.
  int64_t stream_offset(const TcpSegment& seg) const;
  size_t open_connections() const;

 private:
  struct Key {
    Endpoint lo;
    Endpoint hi;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  // A held-back piece of stream: [off, off+len), of which the first
  // data.size() bytes were captured and the rest is missing.
  struct Held {
    uint64_t off = 0;
    uint64_t len = 0;
    std::vector<uint8_t> data;
  };
  struct Direction {
    bool started = false;      // next_seq is known
    bool fin = false;          // fin_off is known
    bool syn = false;          // syn_seq is known
    uint32_t next_seq = 0;     // sequence number of the next stream byte
    uint32_t syn_seq = 0;
    uint64_t next_off = 0;     // stream offset of the next byte to deliver
    uint64_t fin_off = 0;      // stream offset of the FIN
    size_t held_bytes = 0;     // captured bytes in `held`
    std::vector<Held> held;    // descending by off: the lowest is at the back
  };
  struct Conn {
    TcpConnection info;
    Direction dir[2];          // by StreamSide
    bool closed = false;
    PacketMeta last;           // the latest packet of this connection
  };
  struct Closed {
    Key key;
    uint32_t id;
    int64_t ts_sec;
  };

  static Key make_key(const Endpoint& a, const Endpoint& b);
  Conn& open(Conn& slot, const TcpSegment& seg, const PacketMeta& meta);
  static bool finished(const Conn& c, const TcpSegment& s);
  enum class PastEnd : uint8_t { No, Near, Far };
  static PastEnd past_end(const Conn& c, const TcpSegment& s);
  void close(const Key& key, Conn& c);
  void start(Direction& d, uint32_t seq);
  void segment(Conn& c, StreamSide side, uint32_t seq, std::span<const uint8_t> captured, uint64_t length,
               const PacketMeta& meta);
  void fin(Conn& c, StreamSide side, uint32_t seq);
  void emit(Conn& c, StreamSide side, uint64_t off, std::span<const uint8_t> data, uint64_t end,
            const PacketMeta& meta);
  void gap_to(Conn& c, StreamSide side, uint64_t off, const PacketMeta& meta);
  void drain(Conn& c, StreamSide side, const PacketMeta& meta);
  void release_lowest(Conn& c, StreamSide side, const PacketMeta& meta);
  void acknowledged(Conn& c, StreamSide side, uint32_t ack, const PacketMeta& meta);
  void flush(Conn& c, StreamSide side, const PacketMeta& meta);
  void hold(Direction& d, uint64_t off, std::span<const uint8_t> data, uint64_t end);
  Conn* lookup(const Key& key);
  void expire_closed(const PacketMeta& meta);
  std::vector<uint8_t> take_buffer();
  void recycle(std::vector<uint8_t>&& buf);

  StreamSink& sink_;
  size_t max_held_;
  uint32_t next_id_ = 1;
  std::unordered_map<Key, Conn, KeyHash> table_;
  Key last_key_{};                         // lookup()'s last hit, or last_ null
  Conn* last_ = nullptr;
  std::deque<Closed> closed_;              // closed entries, oldest first
  std::vector<std::vector<uint8_t>> pool_; // spare out-of-order buffers
};

}  // namespace kwire
