// kwire record --auto: keeps, in the file, only the TCP connections the
// Kafka sessions recognise. A connection's packets are held until its
// verdict comes, then written (Kafka) or dropped (not Kafka). Held memory is
// bounded per connection and in total, and idle undecided connections are
// evicted; everything dropped this way is counted, never lost silently.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "recorder/capture.hpp"

namespace kwire {

struct FlowGateLimits {
  size_t max_held_per_flow = 4u << 20;   // bytes of one undecided connection
  size_t max_held_total = 256u << 20;    // bytes of all undecided connections
  int64_t idle_ns = 30'000'000'000;      // an undecided connection this quiet is evicted
  int64_t linger_ns = 60'000'000'000;    // a finished connection's verdict is kept this long
};

struct FlowGateStats {
  uint64_t kafka_flows = 0;
  uint64_t other_flows = 0;
  uint64_t dropped_packets = 0;   // of connections that are not Kafka (and non-TCP packets)
  uint64_t evicted_flows = 0;     // undecided connections given up (cap or idle)
  uint64_t evicted_packets = 0;
  uint64_t evicted_bytes = 0;
  size_t held_bytes = 0;          // now
};

class FlowGate {
 public:
  struct Packet {
    int64_t ts_ns;
    uint32_t wire_len;
    uint64_t number;
    std::vector<uint8_t> data;
  };
  using Writer = std::function<void(int64_t ts_ns, std::span<const uint8_t> data, uint32_t wire_len, uint64_t number)>;

  FlowGate(FlowGateLimits limits, Writer write) : limits_(limits), write_(std::move(write)) {}

  // A verdict from the sessions, for the connection between `a` and `b`.
  void verdict(const Endpoint& a, const Endpoint& b, bool kafka, int64_t now_ns);
  // Holds the connection's packets again (a verdict given earlier is
  // suspended) until the next verdict: a TLS connection whose secrets are
  // not in the file yet.
  void hold(const Endpoint& a, const Endpoint& b, int64_t now_ns);
  // A new connection between a and b: a verdict about an earlier one on the
  // same 4-tuple no longer applies.
  void started(const Endpoint& a, const Endpoint& b, int64_t now_ns);
  // The connection ended: its verdict lingers for late packets, then goes.
  void ended(const Endpoint& a, const Endpoint& b, int64_t now_ns);
  // A TCP packet between `src` and `dst`, after the sessions have seen it:
  // written now, held, or dropped.
  void packet(const Endpoint& src, const Endpoint& dst, int64_t ts_ns, std::span<const uint8_t> data,
              uint32_t wire_len, uint64_t number);
  // Evicts idle undecided connections and forgets finished ones.
  void tick(int64_t now_ns);
  // End of capture: undecided connections' packets are evicted (counted).
  void finish();

  const FlowGateStats& stats() const { return stats_; }

 private:
  enum class State : uint8_t { Undecided, Kafka, Other };
  struct Key {
    Endpoint lo, hi;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Flow {
    State state = State::Undecided;
    int64_t last_ns = 0;
    int64_t ended_ns = 0;   // 0: open
    size_t held_bytes = 0;
    std::vector<Packet> held;
  };
  static Key key(const Endpoint& a, const Endpoint& b);
  void evict(Flow& f);
  Flow& oldest();
  void release(Flow& f);

  FlowGateLimits limits_;
  Writer write_;
  std::unordered_map<Key, Flow, KeyHash> flows_;
  FlowGateStats stats_;
};

}  // namespace kwire
