// Kafka over TCP: cuts each direction of a connection into size-prefixed
// messages, decodes requests, and decodes each response with the api key and
// version of its request (matched per connection by correlation id).
//
// A connection moves through explicit states (see ConnState): it is Probing
// until the evidence says whether it carries Kafka and which side is the
// client, then Kafka (or SaslTokens while raw SASL tokens flow after a
// SaslHandshake v0), or NotKafka. Each direction of a Kafka connection is
// Synced (at a message boundary it trusts) or Hunting (after a capture that
// starts mid-stream, a gap, or an implausible size prefix: looking for the
// next offset where a plausible message starts). Every byte ends up in a
// message, a reported skip, or a not-Kafka connection; SessionStats counts
// them all.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "recorder/capture.hpp"

namespace kwire {

struct SessionOptions {
  std::set<uint16_t> ports{9092};
  bool detect_other_ports = true;  // recognise Kafka on any port from the evidence
  bool guess = false;              // decode unmatched responses by trying versions
  uint32_t max_message = 256u << 20;
  // Bytes of one side kept while a connection is Probing, and while a
  // direction Hunts without a candidate; older bytes are reported as skipped.
  size_t probe_window = 1u << 20;
  // A connection with this many bytes and no plausible Kafka request is not Kafka.
  uint64_t probe_limit = 64u << 20;
  // Requests awaiting a response per connection; older ones count as unanswered.
  size_t max_pending = 4096;
  // A connection that ends with no evidence either way (say, a few responses
  // to requests sent before the capture began, from an endpoint not yet known
  // as a broker) waits for another connection to show that one of its
  // endpoints is a broker, and is decoded then; those still waiting at the
  // end of the capture are not Kafka. Off where the verdict is needed when
  // the connection ends (kwire record: its flow gate and redactor).
  bool wait_for_broker = true;
  // Decode payloads inside bytes fields (FrameDecoder::set_nested).
  bool nested = true;
  // The release's structs by their generated decoders; false: all by the
  // interpreter (FrameDecoder::set_compiled), which tests compare them with.
  bool compiled = true;
};

// What the consumer learns about each Kafka message besides the Frame.
struct FrameContext {
  uint64_t number = 0;           // 1-based, in order of completion (0 for a skip)
  PacketMeta packet;             // the packet that completed the message
  const TcpConnection* conn = nullptr;
  Endpoint src, dst;
  uint64_t stream_offset = 0;    // offset of the size prefix in its direction's stream
  bool unmatched = false;        // a response whose request was not captured
  bool not_kafka = false;        // bytes that are not Kafka (TLS, SASL tokens)
  bool tls = false;              // decrypted from TLS: offsets are the plaintext's, not the packets
  std::string note;              // e.g. "stream is TLS-encrypted"
};

// Counts of everything that is not a decoded Kafka message, so that nothing
// is lost without a number.
struct SessionStats {
  uint64_t resyncs = 0;          // times a direction found a message start again after hunting
  uint64_t skipped_bytes = 0;    // bytes of Kafka connections that are in no message
  uint64_t lost_bytes = 0;       // bytes missing from the capture (TCP gaps) in Kafka connections
  uint64_t unanswered = 0;       // requests whose response never came (closed, cap, skipped over)
  uint64_t not_kafka = 0;        // connections with payload that are not Kafka (TLS, other protocols)
  uint64_t sasl_tokens = 0;      // raw SASL tokens after SaslHandshake v0 (not decoded, never printed)
  uint64_t kafka_connections = 0;
  uint64_t tls_connections = 0;  // connections that carry TLS (seen through a TlsLayer)
  uint64_t tls_undecrypted = 0;  // of them, those whose Kafka kwire cannot read (no key, ...)
  uint64_t tls_errors = 0;       // TLS records that failed (a wrong key, a bad MAC, a gap)
};

class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  // Every message, decoded or malformed (frame.errors), in order.
  virtual void on_frame(const FrameContext& ctx, const Frame& frame) = 0;
  // Bytes of a Kafka connection that are in no message: skipped while hunting
  // for a message start, or missing from the capture. ctx.stream_offset is
  // where they start; ctx.packet the packet that settled it.
  virtual void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) = 0;
  // Capture-level problems (file cut short, bad packet).
  virtual void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) = 0;
  // Once per connection, when it is known whether it carries Kafka; `client`
  // is the side that sends requests. Recorders keep or drop a flow on it.
  virtual void on_verdict(const TcpConnection& /*c*/, bool /*kafka*/, const Endpoint& /*client*/) {}
  // The TLS layer's events about a connection (before the sessions act on them).
  virtual void on_tls(const TcpConnection& /*c*/, const TlsEvent& /*event*/) {}
  // A new connection (its 4-tuple may have carried an earlier one).
  virtual void on_connection_start(const TcpConnection& /*c*/) {}
  // The connection is over (FIN/RST both ways, or the end of the capture).
  virtual void on_connection_end(const TcpConnection& /*c*/) {}
};

// Whether `bytes` start like a Kafka request this program set knows: a
// plausible size, a known api key and version, a client id that fits.
bool plausible_request(const ProgramSet& ps, std::span<const uint8_t> bytes);

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
  void on_end() override;
  void on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override;
  void on_tls(const TcpConnection& c, const TlsEvent& event, const PacketMeta& meta) override;

  size_t open_connections() const { return conns_.size(); }
  const SessionStats& stats() const { return stats_; }

  enum class ConnState : uint8_t { Probing, Kafka, SaslTokens, NotKafka };
  enum class Sync : uint8_t { Synced, Hunting };

 private:
  struct Conn;
  struct Stream;
  struct Hunt;
  struct Pending;
  using PendingList = std::deque<Pending>;
  using ApiList = std::vector<std::pair<int16_t, int16_t>>;  // (api key, version)
  bool guess(const Conn& c, std::span<const uint8_t> msg);
  static const Pending* find(const PendingList& list, int32_t corr);
  void settle(Conn& c);
  void finish(Conn& c);
  bool no_evidence(const Conn& c) const;
  void park(std::unique_ptr<Conn> c);
  void settle_oldest_parked();
  void unpark();
  PendingList::iterator pending_of(Conn& c, int32_t corr);
  void answered(Conn& c, PendingList::iterator it);
  bool by_known_broker(Conn& c, const PacketMeta& meta);
  Conn* conn(const TcpConnection& c);
  void probe(Conn& c, int side, const PacketMeta& meta);
  void decide(Conn& c, bool kafka, bool swapped, const PacketMeta& meta);
  void feed(Conn& c, int dir, std::span<const uint8_t> bytes, uint64_t offset, const PacketMeta& meta);
  void run(Conn& c, int dir, const PacketMeta& meta);
  bool resync(Conn& c, int dir, const PacketMeta& meta);
  static void consume(Stream& s, size_t n);
  size_t hunt(Stream& s, Hunt& h, bool requests, const PendingList& pending, std::span<const uint8_t> b);
  static void wait_for(Hunt& h, std::span<const uint8_t> b, uint64_t base, size_t i);
  static void start(Stream& s, uint64_t offset, const PacketMeta& meta);
  enum class Chain : uint8_t { Broken, Partial, Whole };
  Chain chain_of(std::span<const uint8_t> b, size_t end) const;
  static Chain chain_ids(std::span<const uint8_t> b, bool requests);
  void confirm_lone_response(Conn& c, std::span<const uint8_t> request, const PacketMeta& meta);
  void message(Conn& c, int dir, std::span<const uint8_t> msg, uint64_t offset, const PacketMeta& meta);
  void response(Conn& c, FrameContext& ctx, std::span<const uint8_t> msg);
  bool clean_request(std::span<const uint8_t> msg);
  bool clean_response(const PendingList& pending, std::span<const uint8_t> msg);
  void skip(Conn& c, int dir, uint64_t offset, uint64_t length, const PacketMeta& meta, std::string reason);
  void report(Conn& c, int dir, uint64_t offset, const PacketMeta& meta, std::span<const uint8_t> bytes,
              std::string reason, bool not_kafka);
  void truncated(Conn& c, int dir, const PacketMeta& meta, const std::string& why);
  bool is_known_broker(const Endpoint& e) const;
  FrameContext context(const Conn& c, int dir, uint64_t offset, const PacketMeta& meta, bool numbered = true);

  const ProgramSet& ps_;
  FrameDecoder decoder_;
  SessionOptions opts_;
  FrameHandler& out_;
  Frame frame_;
  Frame probe_frame_;
  uint64_t frames_ = 0;
  SessionStats stats_;
  std::unordered_map<uint32_t, std::unique_ptr<Conn>> conns_;
  Conn* last_ = nullptr;  // conn()'s last answer
  std::vector<Endpoint> known_brokers_;  // endpoints seen answering Kafka requests
  ApiList seen_apis_;  // (api, version) of the latest distinct requests decoded anywhere
  // Connections that ended undecided, oldest first (SessionOptions::wait_for_broker).
  std::deque<std::unique_ptr<Conn>> parked_;
  GroupProtocols groups_;   // which groups are consumer groups (old SyncGroups do not say)
  ResponseHint decode_request(std::span<const uint8_t> msg, bool cut);
};

}  // namespace kwire
