// The stream layer's vocabulary and its first stage: endpoints, connections,
// the StreamSink that every stage hands bytes to (TLS, the Kafka sessions, the
// recorder), and PacketPipeline, link-layer and IP/TCP parsing then TCP
// reassembly into per-direction byte streams. Reading a whole capture file
// (libpcap, then this, then TLS) is assembled above this layer and the TLS
// one, in pipeline/capture_file.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kwire {

struct Endpoint {
  std::array<uint8_t, 16> addr{};  // IPv4 in the first 4 bytes
  bool v6 = false;
  uint16_t port = 0;
  std::string str() const;         // "127.0.0.1:9092", "[::1]:9092"
  // The same into buf (at least kTextSize bytes, not terminated); returns the length.
  static constexpr size_t kTextSize = 56;
  size_t format(char* buf) const;
  // Two 64-bit compares for the address, inline: the defaulted operator
  // compiled to a memcmp call, several per packet.
  bool operator==(const Endpoint& o) const {
    uint64_t a[2], b[2];
    std::memcpy(a, addr.data(), 16);
    std::memcpy(b, o.addr.data(), 16);
    return ((a[0] ^ b[0]) | (a[1] ^ b[1])) == 0 && port == o.port && v6 == o.v6;
  }
};

struct PacketMeta {
  uint64_t number = 0;        // 1-based packet number in the capture
  int64_t ts_sec = 0;
  int32_t ts_usec = 0;        // microseconds (nanosecond files are scaled)
};

// One TCP connection as seen by the reassembler. `client` is the side that
// sent the SYN; when the handshake was not captured it is the side that sent
// the first payload, and `saw_syn` is false so the consumer may decide.
struct TcpConnection {
  uint32_t id = 0;            // unique per capture, in order of appearance
  Endpoint client;
  Endpoint server;
  bool saw_syn = false;
};

enum class StreamSide : uint8_t { FromClient, FromServer };

// What the TLS layer (tls/tls_layer.hpp) found out about a connection that
// carries TLS. Decrypted: its application data reaches the sink as the
// connection's bytes from here on. NotDecrypted: nothing of it does (no key,
// a cipher suite kwire does not decrypt, no handshake in the capture); `text`
// says which and names the client random whose key is missing. Failed: a
// record of one direction could not be decrypted or followed (a wrong key, a
// bad record MAC, a gap); that direction stops there, `where` names the
// record's stream offset.
//
// With TlsLayer::hold_for_keys (a key log still being written) two more:
// Pending when a ClientHello starts a TLS connection, Keyed when every key it
// needs is in the log (TLS 1.3: both sides past Finished), so that a recorder
// can hold its packets until the secrets that open them are written first.
struct TlsEvent {
  enum class Kind : uint8_t { Decrypted, NotDecrypted, Failed, Pending, Keyed };
  Kind kind = Kind::Decrypted;
  std::string text;   // "TLS 1.3 TLS_AES_128_GCM_SHA256", "no key for client random 3f2a...", ...
  std::string where;  // Failed: "server TLS record at stream offset 517"
};

class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual void on_open(const TcpConnection& c) = 0;
  // In-order payload. `stream_offset` counts bytes of this direction from the
  // first byte seen. Bytes are only valid during the call.
  virtual void on_data(const TcpConnection& c, StreamSide side, uint64_t stream_offset,
                       std::span<const uint8_t> bytes, const PacketMeta& meta) = 0;
  // Bytes that never arrived (lost from the capture); the stream continues after them.
  virtual void on_gap(const TcpConnection& c, StreamSide side, uint64_t stream_offset,
                      uint64_t length, const PacketMeta& meta) = 0;
  // FIN/RST seen in both directions, or end of capture.
  virtual void on_close(const TcpConnection& c) = 0;
  // End of capture, after the last on_close.
  virtual void on_end() {}
  // The TLS layer's verdicts and errors for a TLS connection (before its
  // first decrypted byte for Decrypted and NotDecrypted). Sinks fed straight
  // from the reassembler never see one.
  virtual void on_tls(const TcpConnection& /*c*/, const TlsEvent& /*event*/, const PacketMeta& /*meta*/) {}
  // A packet or file problem; `where` names the place ("packet 17", "file offset 123").
  virtual void on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) = 0;
};

// How a capture is read (read_capture_file, pipeline/capture_file.hpp) and
// reassembled (PacketPipeline).
struct CaptureOptions {
  std::string bpf_filter;          // optional, applied by libpcap
  // TLS (tls/tls_layer.hpp) between reassembly and the sink: keys from these
  // key log files (SSLKEYLOGFILE format) and from the file's own pcapng
  // Decryption Secrets Blocks. tls=false hands the sink the raw streams.
  std::vector<std::string> tls_keylogs;
  bool tls = true;
  size_t max_buffered_per_direction = 8u << 20;  // out-of-order bytes held back
};

struct CaptureStats {
  uint64_t packets = 0;
  uint64_t tcp_packets = 0;
  uint64_t bytes = 0;              // captured bytes
  uint64_t errors = 0;
  uint64_t connections = 0;
  bool file_damaged = false;       // reading stopped at a cut or corrupt record
};

class TcpReassembler;
struct DecodedPacket;

// Link layer, IP and TCP parsing, then TCP reassembly into `sink`, for one
// link-layer type: what reading a file and capturing live share.
class PacketPipeline {
 public:
  PacketPipeline(int dlt, const CaptureOptions& opts, StreamSink& sink, CaptureStats& stats);
  ~PacketPipeline();
  PacketPipeline(const PacketPipeline&) = delete;
  PacketPipeline& operator=(const PacketPipeline&) = delete;

  // One captured frame: `caplen` bytes at `data`, `wire_len` on the wire.
  // Returns what the frame was (a TCP segment is already reassembled).
  const DecodedPacket& add(const uint8_t* data, uint32_t caplen, uint32_t wire_len, const PacketMeta& meta);
  // Flushes and closes every connection (end of capture).
  void finish();
  TcpReassembler& reassembler() { return *reassembler_; }

 private:
  int dlt_;
  StreamSink& sink_;
  CaptureStats& stats_;
  std::unique_ptr<TcpReassembler> reassembler_;
  std::unique_ptr<DecodedPacket> decoded_;
  struct Fragments;
  std::unique_ptr<Fragments> fragments_;
  uint64_t connections_before_;
};

// "DLT_EN10MB (1, Ethernet)": for messages.
std::string link_type_name(int dlt);

}  // namespace kwire
