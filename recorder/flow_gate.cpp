#include "recorder/flow_gate.hpp"

#include <cstring>

namespace kwire {

size_t FlowGate::KeyHash::operator()(const Key& k) const {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  };
  mix(k.lo.addr.data(), 16);
  mix(&k.lo.port, 2);
  mix(k.hi.addr.data(), 16);
  mix(&k.hi.port, 2);
  return static_cast<size_t>(h);
}

FlowGate::Key FlowGate::key(const Endpoint& a, const Endpoint& b) {
  const int c = std::memcmp(a.addr.data(), b.addr.data(), a.addr.size());
  const bool a_first = c < 0 || (c == 0 && a.port <= b.port);
  return a_first ? Key{a, b} : Key{b, a};
}

void FlowGate::verdict(const Endpoint& a, const Endpoint& b, bool kafka, int64_t now_ns) {
  Flow& f = flows_[key(a, b)];
  f.last_ns = now_ns;
  f.ended_ns = 0;
  const State was = f.state;
  f.state = kafka ? State::Kafka : State::Other;
  if (was == f.state) return;
  if (kafka) {
    ++stats_.kafka_flows;
    release(f);
  } else {
    ++stats_.other_flows;
    stats_.dropped_packets += f.held.size();
    stats_.held_bytes -= f.held_bytes;
    f.held.clear();
    f.held_bytes = 0;
  }
}

void FlowGate::hold(const Endpoint& a, const Endpoint& b, int64_t now_ns) {
  Flow& f = flows_[key(a, b)];
  if (f.state == State::Kafka) --stats_.kafka_flows;
  if (f.state == State::Other) --stats_.other_flows;
  f.state = State::Undecided;
  f.last_ns = now_ns;
}

void FlowGate::started(const Endpoint& a, const Endpoint& b, int64_t now_ns) {
  Flow& f = flows_[key(a, b)];
  if (f.state == State::Undecided) return;
  f = Flow{};
  f.last_ns = now_ns;
}

void FlowGate::ended(const Endpoint& a, const Endpoint& b, int64_t now_ns) {
  auto it = flows_.find(key(a, b));
  if (it != flows_.end()) it->second.ended_ns = now_ns;
}

void FlowGate::packet(const Endpoint& src, const Endpoint& dst, int64_t ts_ns, std::span<const uint8_t> data,
                      uint32_t wire_len, uint64_t number) {
  Flow& f = flows_[key(src, dst)];
  f.last_ns = ts_ns;
  switch (f.state) {
    case State::Kafka:
      write_(ts_ns, data, wire_len, number);
      return;
    case State::Other:
      ++stats_.dropped_packets;
      return;
    case State::Undecided:
      break;
  }
  if (f.held_bytes + data.size() > limits_.max_held_per_flow) evict(f);
  while (stats_.held_bytes + data.size() > limits_.max_held_total && stats_.held_bytes > 0) evict(oldest());
  f.held.push_back({ts_ns, wire_len, number, {data.begin(), data.end()}});
  f.held_bytes += data.size();
  stats_.held_bytes += data.size();
}

// Writes what an undecided connection held, now that it is Kafka.
void FlowGate::release(Flow& f) {
  for (const Packet& p : f.held) write_(p.ts_ns, p.data, p.wire_len, p.number);
  stats_.held_bytes -= f.held_bytes;
  f.held.clear();
  f.held_bytes = 0;
}

void FlowGate::evict(Flow& f) {
  if (f.held.empty()) return;
  ++stats_.evicted_flows;
  stats_.evicted_packets += f.held.size();
  stats_.evicted_bytes += f.held_bytes;
  stats_.held_bytes -= f.held_bytes;
  f.held.clear();
  f.held_bytes = 0;
}

// The undecided connection that has waited longest since its last packet
// (a scan, but only when the total limit is reached).
FlowGate::Flow& FlowGate::oldest() {
  Flow* pick = nullptr;
  for (auto& [k, f] : flows_) {
    if (f.held.empty()) continue;
    if (!pick || f.last_ns < pick->last_ns) pick = &f;
  }
  return *pick;
}

void FlowGate::tick(int64_t now_ns) {
  for (auto it = flows_.begin(); it != flows_.end();) {
    Flow& f = it->second;
    const bool idle = now_ns - f.last_ns > limits_.idle_ns;
    if (f.state == State::Undecided && idle) {
      evict(f);
      it = flows_.erase(it);
    } else if (f.ended_ns && now_ns - f.ended_ns > limits_.linger_ns && idle) {
      it = flows_.erase(it);
    } else {
      ++it;
    }
  }
}

void FlowGate::finish() {
  for (auto& [k, f] : flows_) evict(f);
}

}  // namespace kwire
