// The traffic of kwire-gencap's workloads ("mixed" and "small"; see
// kwire-gencap.cpp for what each holds), written to a Traffic: a pcap file
// (kwire-gencap) or the list of messages in capture order (kwire_bench, which
// decodes the same messages with no capture to read).
#pragma once

#include <cstdint>
#include <vector>

#include "bench/kafka_messages.hpp"
#include "recorder/pcap_writer.hpp"

namespace kwire::bench {

class Traffic {
 public:
  virtual ~Traffic() = default;
  virtual uint32_t connect(const Endpoint& client, const Endpoint& server, const ConnectOptions& opts = {}) = 0;
  virtual void close(uint32_t conn) = 0;

  // A request on `conn` and its response.
  void exchange(uint32_t conn, const WireMessage& req, const WireMessage& resp);

  // Bytes of the pcap file the exchanges so far make (file header, and per
  // segment of at most 1460 bytes: record header 16, Ethernet 14, IPv4 20, TCP
  // 20 with a 12-byte timestamp option); handshakes and FINs are not counted.
  uint64_t estimated() const { return estimated_; }
  uint64_t messages() const { return messages_; }

 protected:
  virtual void send(uint32_t conn, const WireMessage& req, const WireMessage& resp) = 0;

 private:
  uint64_t estimated_ = 24;
  uint64_t messages_ = 0;
};

// Round after round until the estimated capture reaches `target` bytes; the
// connections are opened first and closed at the end. Return the rounds.
uint64_t mixed_traffic(Traffic& t, uint64_t target, uint64_t seed, bool apis_both_know);
uint64_t small_traffic(Traffic& t, uint64_t target);

// The messages alone, in capture order.
class MessageList : public Traffic {
 public:
  uint32_t connect(const Endpoint&, const Endpoint&, const ConnectOptions& = {}) override { return 0; }
  void close(uint32_t) override {}
  std::vector<WireMessage> messages;

 protected:
  void send(uint32_t, const WireMessage& req, const WireMessage& resp) override {
    messages.push_back(req);
    messages.push_back(resp);
  }
};

}  // namespace kwire::bench
