#include "recorder/redactor.hpp"

#include <algorithm>

namespace kwire {

std::string Redactor::key(const Endpoint& src, const Endpoint& dst) { return src.str() + ">" + dst.str(); }

void Redactor::kafka(const Endpoint& a, const Endpoint& b) {
  dirs_[key(a, b)].kafka = true;
  dirs_[key(b, a)].kafka = true;
}

void Redactor::complete(const Endpoint& src, const Endpoint& dst, uint64_t upto) {
  Dir& d = dirs_[key(src, dst)];
  d.complete = std::max(d.complete, upto);
  release(d, false);
}

void Redactor::secret(const Endpoint& src, const Endpoint& dst, uint64_t from, uint64_t to) {
  if (to > from) dirs_[key(src, dst)].secrets.push_back({from, to});
}

void Redactor::packet(const Endpoint& src, const Endpoint& dst, int64_t stream_start, size_t payload_at,
                      size_t payload_len, int64_t ts_ns, std::span<const uint8_t> data, uint32_t wire_len,
                      uint64_t number) {
  auto it = stream_start >= 0 ? dirs_.find(key(src, dst)) : dirs_.end();
  if (it == dirs_.end() || !it->second.kafka) {
    forward_(src, dst, ts_ns, data, wire_len, number);
    return;
  }
  Dir& d = it->second;
  Held h{ts_ns, wire_len, number, stream_start, payload_at, payload_len, src, dst, {data.begin(), data.end()}};
  held_bytes_ += h.data.size();
  d.held.push_back(std::move(h));
  release(d, false);
}

// Zeroes the secret bytes the packet's payload carries (what a snaplen cut
// left of them).
void Redactor::edit(const Dir& d, Held& h) {
  const uint64_t start = static_cast<uint64_t>(h.start);
  const size_t captured = std::min(h.payload_len, h.data.size() > h.payload_at ? h.data.size() - h.payload_at : 0);
  for (const Range& r : d.secrets) {
    const uint64_t from = std::max(r.from, start), to = std::min(r.to, start + captured);
    if (from >= to) continue;
    std::fill(h.data.begin() + static_cast<std::ptrdiff_t>(h.payload_at + (from - start)),
              h.data.begin() + static_cast<std::ptrdiff_t>(h.payload_at + (to - start)), 0);
    redacted_ += to - from;
  }
}

// Packets go on in their order once every message they touch is complete
// (`all`: regardless, at the end of the connection or the capture).
void Redactor::release(Dir& d, bool all) {
  while (!d.held.empty()) {
    Held& h = d.held.front();
    if (!all && static_cast<uint64_t>(h.start) + h.payload_len > d.complete) break;
    edit(d, h);
    held_bytes_ -= h.data.size();
    forward_(h.src, h.dst, h.ts_ns, h.data, h.wire_len, h.number);
    d.held.pop_front();
  }
  // Secrets stay until the connection ends: a late retransmission carries them again.
}

void Redactor::plain(const Endpoint& a, const Endpoint& b) {
  for (const std::string& k : {key(a, b), key(b, a)}) {
    Dir& d = dirs_[k];
    release(d, true);
    d.kafka = false;
  }
}

void Redactor::ended(const Endpoint& a, const Endpoint& b) {
  for (const std::string& k : {key(a, b), key(b, a)}) {
    auto it = dirs_.find(k);
    if (it == dirs_.end()) continue;
    release(it->second, true);
    dirs_.erase(it);
  }
}

void Redactor::finish() {
  for (auto& [k, d] : dirs_) release(d, true);
}

}  // namespace kwire
