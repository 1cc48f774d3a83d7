// TLS secrets as clients log them: the NSS key log format (SSLKEYLOGFILE),
// from a file or from the Decryption Secrets Blocks of a pcapng file.
//
//   CLIENT_RANDOM <client random> <master secret>               TLS 1.2
//   RSA Session-ID:<session id> Master-Key:<master secret>      TLS 1.2, by session id
//   CLIENT_HANDSHAKE_TRAFFIC_SECRET <client random> <secret>    TLS 1.3, and
//   SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0
//
// All values are hex. Other labels (EXPORTER_SECRET, early data) are read and
// not needed. Secrets are never printed: messages name a line, not its value.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kwire {

enum class TlsSecret : uint8_t {
  MasterSecret,            // TLS 1.2 (CLIENT_RANDOM)
  ClientHandshake,         // TLS 1.3
  ServerHandshake,
  ClientTraffic0,
  ServerTraffic0,
  Count,
};

using TlsRandom = std::array<uint8_t, 32>;

class TlsKeyLog {
 public:
  // Reads key log text. `origin` names it in messages ("keys.log",
  // "capture.pcapng secrets block 1"). A line that cannot be read is skipped
  // and described in `warnings` (by origin and line number); the rest count.
  void add_text(std::string_view text, const std::string& origin, std::vector<std::string>& warnings);
  // Reads a key log file; false and `error` when it cannot be read at all.
  bool add_file(const std::string& path, std::vector<std::string>& warnings, std::string& error);

  // The secret of `kind` for the connection whose ClientHello had `client_random`.
  const std::vector<uint8_t>* find(TlsSecret kind, const TlsRandom& client_random) const;
  // A TLS 1.2 master secret logged by session id.
  const std::vector<uint8_t>* find_session(std::span<const uint8_t> session_id) const;

  size_t size() const { return by_random_.size() + by_session_.size(); }
  bool empty() const { return size() == 0; }

 private:
  struct Entry {
    std::array<std::vector<uint8_t>, static_cast<size_t>(TlsSecret::Count)> secrets;
  };
  std::map<TlsRandom, Entry> by_random_;
  std::map<std::string, std::vector<uint8_t>> by_session_;  // session id bytes -> master secret
};

// Reads the TLS key logs held in the Decryption Secrets Blocks of a pcapng
// file (as `editcap --inject-secrets tls,FILE` writes them) into `keys`.
// A pcap file, or a pcapng file with none, adds nothing. Returns the number
// of blocks read; -1 and `error` when the file cannot be read.
// `texts`, when given, receives each block's key log text.
int read_pcapng_secrets(const std::string& path, TlsKeyLog& keys, std::vector<std::string>& warnings,
                        std::string& error, std::vector<std::string>* texts = nullptr);

// "3f2a...9c" for messages: a client random is no secret, it is how a user
// finds the key log line that is missing.
std::string hex_string(std::span<const uint8_t> bytes);

}  // namespace kwire
