#include "tls/keylog.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kwire {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parse_hex(std::string_view s, std::vector<uint8_t>& out) {
  out.clear();
  if (s.empty() || s.size() % 2) return false;
  out.reserve(s.size() / 2);
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

struct Label {
  std::string_view name;
  TlsSecret kind;
};
constexpr Label kLabels[] = {
    {"CLIENT_RANDOM", TlsSecret::MasterSecret},
    {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", TlsSecret::ClientHandshake},
    {"SERVER_HANDSHAKE_TRAFFIC_SECRET", TlsSecret::ServerHandshake},
    {"CLIENT_TRAFFIC_SECRET_0", TlsSecret::ClientTraffic0},
    {"SERVER_TRAFFIC_SECRET_0", TlsSecret::ServerTraffic0},
};
// Labels of the format that kwire has no use for; read without a warning.
// OpenSSL logs the secret of each TLS 1.3 key update as CLIENT_/SERVER_TRAFFIC_SECRET_N
// (the next one each time, no number); kwire derives those itself (RFC 8446 7.2).
constexpr std::string_view kKnownUnused[] = {
    "EXPORTER_SECRET",         "CLIENT_EARLY_TRAFFIC_SECRET", "EARLY_EXPORTER_SECRET", "EARLY_EXPORTER_MASTER_SECRET",
    "CLIENT_TRAFFIC_SECRET_N", "SERVER_TRAFFIC_SECRET_N",
};

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) w.push_back(line.substr(i, j - i));
    i = j;
  }
  return w;
}

}  // namespace

std::string hex_string(std::span<const uint8_t> bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

void TlsKeyLog::add_text(std::string_view text, const std::string& origin, std::vector<std::string>& warnings) {
  size_t line_no = 0;
  std::vector<uint8_t> a, b;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto w = words(line);
    if (w.empty() || w[0].starts_with('#')) continue;
    auto warn = [&](const std::string& why) {
      warnings.push_back(origin + " line " + std::to_string(line_no) + ": " + why + "; line skipped");
    };
    if (w[0] == "RSA" && w.size() == 3 && w[1].starts_with("Session-ID:") && w[2].starts_with("Master-Key:")) {
      if (!parse_hex(w[1].substr(11), a) || !parse_hex(w[2].substr(11), b) || b.size() != 48) {
        warn("RSA Session-ID line whose session id or 48-byte master key is not hex");
        continue;
      }
      by_session_[std::string(a.begin(), a.end())] = b;
      continue;
    }
    const Label* label = nullptr;
    for (const Label& l : kLabels) {
      if (w[0] == l.name) label = &l;
    }
    if (!label) {
      bool unused = w[0] == "RSA";
      for (std::string_view u : kKnownUnused) unused |= w[0] == u;
      if (!unused) warn("unknown label '" + std::string(w[0].substr(0, 40)) + "'");
      continue;
    }
    if (w.size() != 3) {
      warn(std::string(label->name) + " needs a client random and a secret");
      continue;
    }
    if (!parse_hex(w[1], a) || a.size() != 32) {
      warn(std::string(label->name) + " with a client random that is not 32 bytes of hex");
      continue;
    }
    if (!parse_hex(w[2], b) || (label->kind == TlsSecret::MasterSecret ? b.size() != 48 : b.size() < 32 || b.size() > 64)) {
      warn(std::string(label->name) + " with a secret that is not hex of the right length");
      continue;
    }
    TlsRandom r;
    std::memcpy(r.data(), a.data(), 32);
    by_random_[r].secrets[static_cast<size_t>(label->kind)] = b;
  }
}

bool TlsKeyLog::add_file(const std::string& path, std::vector<std::string>& warnings, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open TLS key log " + path + ": " + std::strerror(errno);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  add_text(ss.str(), path, warnings);
  return true;
}

const std::vector<uint8_t>* TlsKeyLog::find(TlsSecret kind, const TlsRandom& client_random) const {
  auto it = by_random_.find(client_random);
  if (it == by_random_.end()) return nullptr;
  const auto& s = it->second.secrets[static_cast<size_t>(kind)];
  return s.empty() ? nullptr : &s;
}

const std::vector<uint8_t>* TlsKeyLog::find_session(std::span<const uint8_t> session_id) const {
  if (session_id.empty()) return nullptr;
  auto it = by_session_.find(std::string(session_id.begin(), session_id.end()));
  return it == by_session_.end() ? nullptr : &it->second;
}

// pcapng: blocks of (type, total length, body, total length); the Section
// Header Block's byte-order magic says the file's endianness.
int read_pcapng_secrets(const std::string& path, TlsKeyLog& keys, std::vector<std::string>& warnings,
                        std::string& error, std::vector<std::string>* texts) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return -1;
  }
  constexpr uint32_t kShb = 0x0A0D0D0A, kDsb = 0x0000000A, kTlsKeyLog = 0x544c534b;
  bool swap = false;
  auto u32 = [&](const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
  };
  int blocks = 0;
  uint64_t offset = 0;
  uint8_t head[12];
  std::vector<uint8_t> body;
  bool first = true;
  while (std::fread(head, 1, 8, f) == 8) {
    uint32_t type;
    std::memcpy(&type, head, 4);
    if (type == kShb) {
      if (std::fread(head + 8, 1, 4, f) != 4) break;
      uint32_t magic;
      std::memcpy(&magic, head + 8, 4);
      if (magic == 0x1A2B3C4D) swap = false;
      else if (magic == 0x4D3C2B1A) swap = true;
      else break;
      std::fseek(f, -4, SEEK_CUR);
    } else if (first) {
      break;  // not pcapng (a pcap file): no secrets blocks
    }
    first = false;
    type = u32(head);
    const uint32_t total = u32(head + 4);
    if (total < 12 || total % 4) break;  // the capture reader reports a damaged file
    if (type == kDsb && total >= 20 && total <= (64u << 20)) {
      body.resize(total - 8);
      if (std::fread(body.data(), 1, body.size(), f) != body.size()) break;
      const uint32_t stype = u32(body.data()), slen = u32(body.data() + 4);
      ++blocks;
      if (stype == kTlsKeyLog && slen <= body.size() - 12) {
        const std::string_view text(reinterpret_cast<const char*>(body.data() + 8), slen);
        keys.add_text(text, path + " decryption secrets block at file offset " + std::to_string(offset), warnings);
        if (texts) texts->emplace_back(text);
      }
    } else if (std::fseek(f, static_cast<long>(total) - 8, SEEK_CUR) != 0) {
      break;
    }
    offset += total;
  }
  std::fclose(f);
  return blocks;
}

}  // namespace kwire
