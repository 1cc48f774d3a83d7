// kwire record --redact-sasl: overwrites SASL secrets in the packets written
// (SaslAuthenticate auth bytes, raw tokens after SaslHandshake v0) with zero
// bytes of the same length, so the file still decodes. A secret is known only
// once its message is complete, so a Kafka connection's packets wait until
// every message they carry bytes of is complete; then they go on, edited.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "recorder/capture.hpp"

namespace kwire {

class Redactor {
 public:
  using Forward = std::function<void(const Endpoint& src, const Endpoint& dst, int64_t ts_ns,
                                     std::span<const uint8_t> data, uint32_t wire_len, uint64_t number)>;
  explicit Redactor(Forward forward) : forward_(std::move(forward)) {}

  // The connection between a and b carries Kafka: its packets may carry secrets.
  void kafka(const Endpoint& a, const Endpoint& b);
  // It turned out not to (TLS on a Kafka port): packets go on unedited.
  void plain(const Endpoint& a, const Endpoint& b);
  // Messages from src to dst are complete up to stream offset `upto`.
  void complete(const Endpoint& src, const Endpoint& dst, uint64_t upto);
  // Stream bytes [from, to) from src to dst are secret.
  void secret(const Endpoint& src, const Endpoint& dst, uint64_t from, uint64_t to);
  // A packet. `stream_start` is the stream offset of its TCP payload, which
  // starts `payload_at` bytes into `data` and is `payload_len` bytes long
  // (stream_start -1: not TCP, or no known stream).
  void packet(const Endpoint& src, const Endpoint& dst, int64_t stream_start, size_t payload_at, size_t payload_len,
              int64_t ts_ns, std::span<const uint8_t> data, uint32_t wire_len, uint64_t number);
  // The connection ended: what it holds goes on.
  void ended(const Endpoint& a, const Endpoint& b);
  void finish();

  uint64_t redacted_bytes() const { return redacted_; }
  size_t held_bytes() const { return held_bytes_; }

 private:
  struct Held {
    int64_t ts_ns;
    uint32_t wire_len;
    uint64_t number;
    int64_t start;
    size_t payload_at, payload_len;
    Endpoint src, dst;
    std::vector<uint8_t> data;
  };
  struct Range {
    uint64_t from, to;
  };
  struct Dir {
    bool kafka = false;
    uint64_t complete = 0;
    std::vector<Range> secrets;
    std::deque<Held> held;
  };
  static std::string key(const Endpoint& src, const Endpoint& dst);
  void release(Dir& d, bool all);
  void edit(const Dir& d, Held& h);

  Forward forward_;
  std::unordered_map<std::string, Dir> dirs_;
  uint64_t redacted_ = 0;
  size_t held_bytes_ = 0;
};

}  // namespace kwire
