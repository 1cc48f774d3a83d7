// TLS between TCP reassembly and the Kafka sessions: a StreamSink that finds
// the connections that carry TLS, follows their records and handshakes, and
// hands the decrypted application data on to the next sink as if it were the
// connection's bytes (offsets count plaintext). Every other connection passes
// through untouched.
//
// TLS 1.2 and 1.3 with AES-128/256-GCM and ChaCha20-Poly1305, TLS 1.3 key
// updates, and TLS 1.2 AES-128/256-CBC with HMAC-SHA1/-SHA256/-SHA384 (MAC
// then encrypt, or encrypt_then_mac when the ServerHello says so); keys from a
// TlsKeyLog. Records may span segments and a segment may hold several. The
// cryptography is OpenSSL's libcrypto (EVP AEAD and CBC, EVP_MAC HMAC, HKDF,
// TLS1-PRF).
//
// A connection is decided when both hellos are seen: it is decrypted, or it
// is NotDecrypted with the reason (the client random whose key the log lacks,
// a cipher suite kwire does not decrypt, a handshake the capture does not
// hold). A record that fails to decrypt (a wrong key, a bad MAC) or a gap in a
// direction is a Failed event with the record's offset, and that direction
// stops there. Memory: at most one partial record and one partial handshake
// message per direction.
#pragma once

#include <openssl/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "recorder/capture.hpp"
#include "tls/keylog.hpp"

namespace kwire {

struct TlsStats {
  uint64_t connections = 0;   // connections that carry TLS
  uint64_t decrypted = 0;
  uint64_t undecrypted = 0;   // TLS connections whose application data kwire cannot read
  uint64_t errors = 0;        // directions stopped by a record that failed
  uint64_t records = 0;       // records decrypted
};

// Whether `b` starts like a TLS record: a content type, a 3.x version and a
// length a record may have.
bool looks_like_tls_record(std::span<const uint8_t> b);

// One direction of a TLS 1.2 record protection by AES-CBC with HMAC
// (RFC 5246 6.2.3.2): the record is an explicit IV and the CBC encryption of
// content, MAC and padding; with encrypt_then_mac (RFC 7366) the MAC follows
// the IV and ciphertext and covers them. The caller counts sequence numbers.
class TlsCbcProtection {
 public:
  enum class Mac : uint8_t { Sha1, Sha256, Sha384 };

  TlsCbcProtection() = default;
  TlsCbcProtection(const TlsCbcProtection&) = delete;
  TlsCbcProtection& operator=(const TlsCbcProtection&) = delete;
  ~TlsCbcProtection();

  // `key`: 16 or 32 bytes (AES-128, AES-256); `mac_key`: the hash's length.
  // False when they do not fit or libcrypto fails.
  bool set(std::span<const uint8_t> key, std::span<const uint8_t> mac_key, Mac mac, bool encrypt_then_mac);

  // Opens record number `seq` (`header` its 5 bytes, `payload` the rest) and
  // appends its content to `out`; nullptr, or what is wrong ("bad record
  // MAC", "bad padding", a length that does not fit), `out` then unchanged.
  const char* open(uint64_t seq, std::span<const uint8_t> header, std::span<const uint8_t> payload,
                   std::vector<uint8_t>& out);

 private:
  bool mac(uint64_t seq, std::span<const uint8_t> header, std::span<const uint8_t> data, uint8_t* out);

  EVP_CIPHER_CTX* ctx_ = nullptr;
  EVP_MAC_CTX* mac_ = nullptr;
  std::vector<uint8_t> mac_key_;
  size_t mac_length_ = 0;
  bool etm_ = false;
};

class TlsLayer : public StreamSink {
 public:
  // `keys` may be empty (every TLS connection is then NotDecrypted) and must
  // outlive the layer; more keys may be added to it between calls.
  TlsLayer(StreamSink& next, const TlsKeyLog& keys);
  ~TlsLayer() override;

  void on_open(const TcpConnection& c) override;
  void on_data(const TcpConnection& c, StreamSide side, uint64_t stream_offset, std::span<const uint8_t> bytes,
               const PacketMeta& meta) override;
  void on_gap(const TcpConnection& c, StreamSide side, uint64_t stream_offset, uint64_t length,
              const PacketMeta& meta) override;
  void on_close(const TcpConnection& c) override;
  void on_end() override;
  void on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override;

  const TlsStats& stats() const { return stats_; }

  // For a key log that is still being written (kwire record follows it): a
  // connection whose key is not there yet waits, its records held up to
  // `bytes` per connection, and keys_added() tries again. Without it (0, the
  // default) a missing key is final at once.
  void hold_for_keys(size_t bytes) { hold_ = bytes; }
  void keys_added(const PacketMeta& meta);

  struct Conn;  // per connection state (tls_layer.cpp)

 private:
  Conn* conn(const TcpConnection& c);
  void classify(Conn& c, int side, uint64_t offset, std::span<const uint8_t> bytes, const PacketMeta& meta);
  void pass_through(Conn& c, const PacketMeta& meta, int first = 0);
  void records(Conn& c, int side, std::span<const uint8_t> bytes, const PacketMeta& meta);
  bool record(Conn& c, int side, std::span<const uint8_t> rec, uint64_t offset, const PacketMeta& meta);
  void handshake(Conn& c, int side, std::span<const uint8_t> data, uint64_t offset, const PacketMeta& meta);
  bool message(Conn& c, int side, uint8_t type, std::span<const uint8_t> body, uint64_t offset,
               const PacketMeta& meta);
  bool keys_for(Conn& c, const PacketMeta& meta);
  bool has_keys(const Conn& c) const;
  bool switch_keys(Conn& c, int side, const PacketMeta& meta);
  std::string missing_key(const Conn& c) const;
  bool decided(Conn& c, const PacketMeta& meta);
  void hold(Conn& c, int side, std::span<const uint8_t> bytes, const PacketMeta& meta);
  void not_decrypted(Conn& c, const std::string& why, const PacketMeta& meta);
  void fail(Conn& c, int side, uint64_t offset, const std::string& why, const PacketMeta& meta);
  void flush(Conn& c, int side, const PacketMeta& meta);

  StreamSink& next_;
  const TlsKeyLog& keys_;
  TlsStats stats_;
  std::unordered_map<uint32_t, std::unique_ptr<Conn>> conns_;
  Conn* last_ = nullptr;
  size_t hold_ = 0;
  size_t waiting_ = 0;  // connections waiting for their key
};

}  // namespace kwire
