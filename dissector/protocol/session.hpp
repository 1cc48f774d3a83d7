// Kafka over TCP: cuts each direction of a connection into size-prefixed
// messages, decodes requests, and decodes each response with the api key and
// version of its request (matched per connection by correlation id).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "recorder/capture.hpp"

namespace kwire {

struct SessionOptions {
  std::set<uint16_t> ports{9092};
  bool detect_other_ports = true;  // recognise Kafka on any port from a plausible request
  bool guess = false;              // decode unmatched responses by trying versions
  uint32_t max_message = 256u << 20;
};

// What the consumer learns about each Kafka message besides the Frame.
struct FrameContext {
  uint64_t number = 0;           // 1-based, in order of completion
  PacketMeta packet;             // the packet that completed the message
  const TcpConnection* conn = nullptr;
  Endpoint src, dst;
  uint64_t stream_offset = 0;    // offset of the size prefix in its direction's stream
  bool unmatched = false;        // a response whose request was not captured
  bool not_kafka = false;        // bytes that are not Kafka (TLS, SASL tokens, desync)
  std::string note;              // e.g. "stream is TLS-encrypted"
};

class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  // Every message, decoded or malformed (frame.errors), in order.
  virtual void on_frame(const FrameContext& ctx, const Frame& frame) = 0;
  // Capture-level problems (file cut short, bad packet).
  virtual void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) = 0;
};

class KafkaSessions : public StreamSink {
 public:
  KafkaSessions(const ProgramSet& ps, SessionOptions opts, FrameHandler& out);
  ~KafkaSessions() override;

  void on_open(const TcpConnection& c) override;
  void on_data(const TcpConnection& c, StreamSide side, uint64_t stream_offset,
               std::span<const uint8_t> bytes, const PacketMeta& meta) override;
  void on_gap(const TcpConnection& c, StreamSide side, uint64_t stream_offset, uint64_t length,
              const PacketMeta& meta) override;
  void on_close(const TcpConnection& c) override;
  void on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override;

  size_t open_connections() const { return conns_.size(); }

 private:
  struct Conn;
  struct Direction_;
  Conn* conn(const TcpConnection& c);
  void consume(Conn& c, int dir, std::span<const uint8_t> bytes, uint64_t offset, const PacketMeta& meta);
  void message(Conn& c, int dir, std::span<const uint8_t> msg, uint64_t offset, const PacketMeta& meta);
  void report(Conn& c, int dir, uint64_t offset, const PacketMeta& meta, std::span<const uint8_t> bytes,
              std::string reason, bool not_kafka);
  enum class Role : uint8_t { Undecided, Kafka, NotKafka };
  Role decide_roles(Conn& c, int side, std::span<const uint8_t> bytes);
  bool is_known_broker(const Endpoint& e) const;
  FrameContext context(const Conn& c, int dir, uint64_t offset, const PacketMeta& meta);

  const ProgramSet& ps_;
  FrameDecoder decoder_;
  SessionOptions opts_;
  FrameHandler& out_;
  Frame frame_;
  uint64_t frames_ = 0;
  std::unordered_map<uint32_t, std::unique_ptr<Conn>> conns_;
  std::vector<Endpoint> known_brokers_;  // endpoints seen answering Kafka requests
};

// Whether `bytes` start like a Kafka request this program set knows.
bool plausible_request(const ProgramSet& ps, std::span<const uint8_t> bytes);

}  // namespace kwire
