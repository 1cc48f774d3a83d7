#include "tls/tls_layer.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace kwire {

namespace {

enum class Cipher : uint8_t { Aes128Gcm, Aes256Gcm, ChaCha20Poly1305, Aes128Cbc, Aes256Cbc };

struct Suite {
  uint16_t id;
  const char* name;
  bool tls13;
  Cipher cipher;
  bool sha384;  // the suite's hash (HKDF, PRF); SHA-256 otherwise
  // CBC suites: the record MAC's hash and its length (the MAC key's too).
  TlsCbcProtection::Mac mac = TlsCbcProtection::Mac::Sha1;
  size_t mac_length = 0;
};

using Mac = TlsCbcProtection::Mac;

constexpr Suite kSuites[] = {
    {0x1301, "TLS_AES_128_GCM_SHA256", true, Cipher::Aes128Gcm, false},
    {0x1302, "TLS_AES_256_GCM_SHA384", true, Cipher::Aes256Gcm, true},
    {0x1303, "TLS_CHACHA20_POLY1305_SHA256", true, Cipher::ChaCha20Poly1305, false},
    {0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", false, Cipher::Aes128Gcm, false},
    {0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", false, Cipher::Aes256Gcm, true},
    {0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", false, Cipher::Aes128Gcm, false},
    {0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", false, Cipher::Aes256Gcm, true},
    {0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256", false, Cipher::Aes128Gcm, false},
    {0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384", false, Cipher::Aes256Gcm, true},
    {0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", false, Cipher::Aes128Gcm, false},
    {0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", false, Cipher::Aes256Gcm, true},
    {0x00A2, "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256", false, Cipher::Aes128Gcm, false},
    {0x00A3, "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384", false, Cipher::Aes256Gcm, true},
    {0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", false, Cipher::ChaCha20Poly1305, false},
    {0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", false, Cipher::ChaCha20Poly1305, false},
    {0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", false, Cipher::ChaCha20Poly1305, false},
    // TLS 1.2 CBC with HMAC: the PRF is SHA-256 but for the _SHA384 suites (RFC 5246 5, RFC 5289 3.2).
    {0x002F, "TLS_RSA_WITH_AES_128_CBC_SHA", false, Cipher::Aes128Cbc, false, Mac::Sha1, 20},
    {0x0035, "TLS_RSA_WITH_AES_256_CBC_SHA", false, Cipher::Aes256Cbc, false, Mac::Sha1, 20},
    {0x003C, "TLS_RSA_WITH_AES_128_CBC_SHA256", false, Cipher::Aes128Cbc, false, Mac::Sha256, 32},
    {0x003D, "TLS_RSA_WITH_AES_256_CBC_SHA256", false, Cipher::Aes256Cbc, false, Mac::Sha256, 32},
    {0x0033, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA", false, Cipher::Aes128Cbc, false, Mac::Sha1, 20},
    {0x0039, "TLS_DHE_RSA_WITH_AES_256_CBC_SHA", false, Cipher::Aes256Cbc, false, Mac::Sha1, 20},
    {0x0067, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256", false, Cipher::Aes128Cbc, false, Mac::Sha256, 32},
    {0x006B, "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256", false, Cipher::Aes256Cbc, false, Mac::Sha256, 32},
    {0xC009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", false, Cipher::Aes128Cbc, false, Mac::Sha1, 20},
    {0xC00A, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", false, Cipher::Aes256Cbc, false, Mac::Sha1, 20},
    {0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", false, Cipher::Aes128Cbc, false, Mac::Sha1, 20},
    {0xC014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", false, Cipher::Aes256Cbc, false, Mac::Sha1, 20},
    {0xC023, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", false, Cipher::Aes128Cbc, false, Mac::Sha256, 32},
    {0xC024, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", false, Cipher::Aes256Cbc, true, Mac::Sha384, 48},
    {0xC027, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", false, Cipher::Aes128Cbc, false, Mac::Sha256, 32},
    {0xC028, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", false, Cipher::Aes256Cbc, true, Mac::Sha384, 48},
};

bool is_cbc(Cipher c) { return c == Cipher::Aes128Cbc || c == Cipher::Aes256Cbc; }

const Suite* suite_of(uint16_t id) {
  for (const Suite& s : kSuites) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

std::string suite_name(uint16_t id) {
  if (const Suite* s = suite_of(id)) return s->name;
  char buf[24];
  std::snprintf(buf, sizeof buf, "cipher suite 0x%04X", id);
  return buf;
}

size_t key_length(Cipher a) { return a == Cipher::Aes128Gcm || a == Cipher::Aes128Cbc ? 16 : 32; }

const EVP_CIPHER* evp_cipher(Cipher a) {
  switch (a) {
    case Cipher::Aes128Gcm: return EVP_aes_128_gcm();
    case Cipher::Aes256Gcm: return EVP_aes_256_gcm();
    case Cipher::ChaCha20Poly1305: return EVP_chacha20_poly1305();
    case Cipher::Aes128Cbc: return EVP_aes_128_cbc();
    case Cipher::Aes256Cbc: return EVP_aes_256_cbc();
  }
  return nullptr;
}

const char* digest_name(const Suite& s) { return s.sha384 ? "SHA384" : "SHA256"; }
size_t hash_length(const Suite& s) { return s.sha384 ? 48 : 32; }

TlsSecret traffic_secret(int side) { return side == 0 ? TlsSecret::ClientTraffic0 : TlsSecret::ServerTraffic0; }

// RFC 8446 section 7.1: HKDF-Expand-Label(secret, label, "", length).
bool expand_label(const Suite& s, std::span<const uint8_t> secret, std::string_view label, size_t length,
                  uint8_t* out) {
  uint8_t info[2 + 1 + 6 + 32 + 1];
  const std::string_view prefix = "tls13 ";
  if (label.size() > 32) return false;
  size_t n = 0;
  info[n++] = static_cast<uint8_t>(length >> 8);
  info[n++] = static_cast<uint8_t>(length);
  info[n++] = static_cast<uint8_t>(prefix.size() + label.size());
  std::memcpy(info + n, prefix.data(), prefix.size());
  n += prefix.size();
  std::memcpy(info + n, label.data(), label.size());
  n += label.size();
  info[n++] = 0;  // empty context
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  if (!kdf) return false;
  EVP_KDF_CTX* ctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (!ctx) return false;
  int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>(digest_name(s)), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<uint8_t*>(secret.data()), secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n),
      OSSL_PARAM_construct_end(),
  };
  const bool ok = EVP_KDF_derive(ctx, out, length, params) > 0;
  EVP_KDF_CTX_free(ctx);
  return ok;
}

// RFC 5246 section 6.3: the key block, PRF(master, "key expansion", server_random + client_random).
bool key_block(const Suite& s, std::span<const uint8_t> master, const TlsRandom& server_random,
               const TlsRandom& client_random, size_t length, uint8_t* out) {
  uint8_t seed[13 + 64];
  std::memcpy(seed, "key expansion", 13);
  std::memcpy(seed + 13, server_random.data(), 32);
  std::memcpy(seed + 45, client_random.data(), 32);
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "TLS1-PRF", nullptr);
  if (!kdf) return false;
  EVP_KDF_CTX* ctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (!ctx) return false;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>(digest_name(s)), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, const_cast<uint8_t*>(master.data()), master.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed, sizeof seed),
      OSSL_PARAM_construct_end(),
  };
  const bool ok = EVP_KDF_derive(ctx, out, length, params) > 0;
  EVP_KDF_CTX_free(ctx);
  return ok;
}

// SHA-256("HelloRetryRequest"): the ServerHello random of a HelloRetryRequest.
constexpr uint8_t kRetryRandom[32] = {0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C,
                                      0x02, 0x1E, 0x65, 0xB8, 0x91, 0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB,
                                      0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C};

constexpr uint8_t kChangeCipherSpec = 20, kHandshake = 22, kApplicationData = 23, kHeartbeat = 24;  // and 21, alerts
constexpr size_t kMaxRecord = 16384 + 2048;      // TLS 1.2's ciphertext limit (1.3's is lower)
constexpr size_t kMaxHandshakeMessage = 1u << 18;

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

constexpr const char* kBadMac = "bad record MAC";

// One direction's record protection: an AEAD key, its IV and the record
// sequence number; or, for a TLS 1.2 CBC suite, TlsCbcProtection.
class Protection {
 public:
  Protection() = default;
  Protection(const Protection&) = delete;
  Protection& operator=(const Protection&) = delete;
  ~Protection() { EVP_CIPHER_CTX_free(ctx_); }

  bool set(Cipher a, bool tls13, std::span<const uint8_t> key, std::span<const uint8_t> iv) {
    if (!ctx_) ctx_ = EVP_CIPHER_CTX_new();
    if (!ctx_) return false;
    cbc_.reset();
    tls13_ = tls13;
    explicit_nonce_ = !tls13 && a != Cipher::ChaCha20Poly1305;  // TLS 1.2 GCM: 4-byte salt + 8 on the wire
    if (EVP_DecryptInit_ex(ctx_, evp_cipher(a), nullptr, nullptr, nullptr) <= 0) return false;
    if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr) <= 0) return false;
    if (EVP_DecryptInit_ex(ctx_, nullptr, nullptr, key.data(), nullptr) <= 0) return false;
    std::memset(iv_, 0, sizeof iv_);
    std::memcpy(iv_, iv.data(), std::min(iv.size(), sizeof iv_));
    seq_ = 0;
    ready_ = true;
    return true;
  }
  bool set_cbc(std::span<const uint8_t> key, std::span<const uint8_t> mac_key, Mac mac, bool encrypt_then_mac) {
    cbc_ = std::make_unique<TlsCbcProtection>();
    seq_ = 0;
    ready_ = cbc_->set(key, mac_key, mac, encrypt_then_mac);
    return ready_;
  }
  bool ready() const { return ready_; }

  // Decrypts one record (`header` its 5 bytes, `payload` the rest) and
  // appends the plaintext to `out`; nullptr, or why it does not open.
  const char* open(std::span<const uint8_t> header, std::span<const uint8_t> payload, std::vector<uint8_t>& out) {
    if (cbc_) {
      const char* why = cbc_->open(seq_, header, payload, out);
      if (!why) ++seq_;
      return why;
    }
    constexpr size_t kTag = 16;
    const size_t lead = explicit_nonce_ ? 8 : 0;
    if (payload.size() < lead + kTag) return kBadMac;
    uint8_t nonce[12];
    std::memcpy(nonce, iv_, 12);
    if (explicit_nonce_) {
      std::memcpy(nonce + 4, payload.data(), 8);
    } else {
      for (int i = 0; i < 8; ++i) nonce[4 + i] ^= static_cast<uint8_t>(seq_ >> (56 - 8 * i));
    }
    const size_t n = payload.size() - lead - kTag;
    uint8_t aad[13];
    size_t aad_len;
    if (tls13_) {
      std::memcpy(aad, header.data(), 5);
      aad_len = 5;
    } else {
      for (int i = 0; i < 8; ++i) aad[i] = static_cast<uint8_t>(seq_ >> (56 - 8 * i));
      aad[8] = header[0];
      aad[9] = header[1];
      aad[10] = header[2];
      aad[11] = static_cast<uint8_t>(n >> 8);
      aad[12] = static_cast<uint8_t>(n);
      aad_len = 13;
    }
    int len = 0;
    if (EVP_DecryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) <= 0) return kBadMac;
    if (EVP_DecryptUpdate(ctx_, nullptr, &len, aad, static_cast<int>(aad_len)) <= 0) return kBadMac;
    const size_t base = out.size();
    out.resize(base + n);
    if (n > 0 && EVP_DecryptUpdate(ctx_, out.data() + base, &len, payload.data() + lead, static_cast<int>(n)) <= 0) {
      out.resize(base);
      return kBadMac;
    }
    if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTag),
                            const_cast<uint8_t*>(payload.data() + payload.size() - kTag)) <= 0 ||
        EVP_DecryptFinal_ex(ctx_, out.data() + base + n, &len) <= 0) {
      out.resize(base);
      return kBadMac;
    }
    ++seq_;
    return nullptr;
  }

 private:
  EVP_CIPHER_CTX* ctx_ = nullptr;
  std::unique_ptr<TlsCbcProtection> cbc_;
  uint8_t iv_[12] = {};
  uint64_t seq_ = 0;
  bool tls13_ = false;
  bool explicit_nonce_ = false;
  bool ready_ = false;
};

std::string not_a_header(std::span<const uint8_t> b) {
  char why[96];
  std::snprintf(why, sizeof why, "not a TLS record header (bytes %02x %02x %02x, length %u)", b[0], b[1], b[2],
                be16(b.data() + 3));
  return why;
}

}  // namespace

TlsCbcProtection::~TlsCbcProtection() {
  EVP_CIPHER_CTX_free(ctx_);
  EVP_MAC_CTX_free(mac_);
}

bool TlsCbcProtection::set(std::span<const uint8_t> key, std::span<const uint8_t> mac_key, Mac mac,
                           bool encrypt_then_mac) {
  const EVP_CIPHER* cipher = key.size() == 16 ? EVP_aes_128_cbc() : key.size() == 32 ? EVP_aes_256_cbc() : nullptr;
  const char* digest = mac == Mac::Sha1 ? "SHA1" : mac == Mac::Sha256 ? "SHA256" : "SHA384";
  mac_length_ = mac == Mac::Sha1 ? 20 : mac == Mac::Sha256 ? 32 : 48;
  if (!cipher || mac_key.size() != mac_length_) return false;
  if (!ctx_) ctx_ = EVP_CIPHER_CTX_new();
  if (!mac_) {
    EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (!hmac) return false;
    mac_ = EVP_MAC_CTX_new(hmac);
    EVP_MAC_free(hmac);
  }
  if (!ctx_ || !mac_) return false;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>(digest), 0),
      OSSL_PARAM_construct_end(),
  };
  if (EVP_MAC_CTX_set_params(mac_, params) <= 0) return false;
  if (EVP_DecryptInit_ex(ctx_, cipher, nullptr, key.data(), nullptr) <= 0) return false;
  if (EVP_CIPHER_CTX_set_padding(ctx_, 0) <= 0) return false;  // TLS padding is checked here, not by EVP
  mac_key_.assign(mac_key.begin(), mac_key.end());
  etm_ = encrypt_then_mac;
  return true;
}

// HMAC(MAC key, seq_num + type + version + length + data), RFC 5246 6.2.3.1.
bool TlsCbcProtection::mac(uint64_t seq, std::span<const uint8_t> header, std::span<const uint8_t> data, uint8_t* out) {
  uint8_t pre[13];
  for (int i = 0; i < 8; ++i) pre[i] = static_cast<uint8_t>(seq >> (56 - 8 * i));
  pre[8] = header[0];
  pre[9] = header[1];
  pre[10] = header[2];
  pre[11] = static_cast<uint8_t>(data.size() >> 8);
  pre[12] = static_cast<uint8_t>(data.size());
  size_t len = 0;
  return EVP_MAC_init(mac_, mac_key_.data(), mac_key_.size(), nullptr) > 0 && EVP_MAC_update(mac_, pre, sizeof pre) > 0 &&
         (data.empty() || EVP_MAC_update(mac_, data.data(), data.size()) > 0) &&
         EVP_MAC_final(mac_, out, &len, 64) > 0 && len == mac_length_;
}

const char* TlsCbcProtection::open(uint64_t seq, std::span<const uint8_t> header, std::span<const uint8_t> payload,
                                   std::vector<uint8_t>& out) {
  constexpr size_t kBlock = 16;
  uint8_t want[64];
  if (etm_) {
    // RFC 7366: IV + ciphertext + MAC over both.
    if (payload.size() < mac_length_ + 2 * kBlock || (payload.size() - mac_length_) % kBlock != 0)
      return "the record's length does not fit CBC blocks and its MAC";
    const auto sealed = payload.first(payload.size() - mac_length_);
    if (!mac(seq, header, sealed, want)) return "libcrypto failed computing the record MAC";
    if (CRYPTO_memcmp(want, payload.data() + sealed.size(), mac_length_) != 0) return kBadMac;
    payload = sealed;
  } else if (payload.size() < kBlock + std::max(kBlock, (mac_length_ + 1 + kBlock - 1) / kBlock * kBlock) ||
             payload.size() % kBlock != 0) {
    return "the record's length does not fit CBC blocks and its MAC";
  }
  const size_t n = payload.size() - kBlock;
  const size_t base = out.size();
  out.resize(base + n);
  int len = 0;
  if (EVP_DecryptInit_ex(ctx_, nullptr, nullptr, nullptr, payload.data()) <= 0 ||
      EVP_DecryptUpdate(ctx_, out.data() + base, &len, payload.data() + kBlock, static_cast<int>(n)) <= 0 ||
      static_cast<size_t>(len) != n) {
    out.resize(base);
    return "libcrypto failed decrypting the record";
  }
  // Content, then (MAC-then-encrypt) its MAC, then padding: padding_length + 1 bytes, each padding_length.
  const uint8_t pad = out[base + n - 1];
  const size_t tail = pad + 1u + (etm_ ? 0 : mac_length_);
  bool padded = tail <= n;
  for (size_t i = 0; padded && i <= pad; ++i) padded = out[base + n - 1 - i] == pad;
  if (!padded) {
    out.resize(base);
    return "bad padding";
  }
  const size_t content = n - tail;
  if (!etm_) {
    if (!mac(seq, header, {out.data() + base, content}, want)) {
      out.resize(base);
      return "libcrypto failed computing the record MAC";
    }
    if (CRYPTO_memcmp(want, out.data() + base + content, mac_length_) != 0) {
      out.resize(base);
      return kBadMac;
    }
  }
  out.resize(base + content);
  return nullptr;
}

bool looks_like_tls_record(std::span<const uint8_t> b) {
  if (b.size() < 5) return false;
  const uint16_t len = be16(b.data() + 3);
  return b[0] >= kChangeCipherSpec && b[0] <= kHeartbeat && b[1] == 3 && b[2] <= 4 && len > 0 && len <= kMaxRecord;
}

struct TlsLayer::Conn {
  enum class Mode : uint8_t { Undecided, Plain, Tls, Opaque };
  TcpConnection tcp;
  Mode mode = Mode::Undecided;
  struct Dir {
    std::vector<uint8_t> early;      // Undecided: the first bytes, too few to tell
    uint64_t early_offset = 0;
    std::vector<uint8_t> rec;        // a record not yet whole
    uint64_t rec_offset = 0;         // stream offset of the next record (of rec's first byte)
    std::vector<uint8_t> hs;         // handshake bytes not yet a whole message
    std::vector<uint8_t> out;        // plaintext for the next sink, sent at the end of each segment
    uint64_t plain_offset = 0;
    Protection protection;
    std::vector<uint8_t> secret;     // TLS 1.3: the current traffic secret
    int epoch = 0;                   // TLS 1.3: 0 plaintext, 1 handshake keys, 2 application keys (+ updates)
    bool encrypted = false;          // records of this direction are protected
    bool change_keys = false;        // TLS 1.3: the record just read ended a Finished or a KeyUpdate
    bool stopped = false;
    std::vector<uint8_t> held;       // waiting for a key: the bytes after the record that needs it
    bool switch_waits = false;       // TLS 1.3: its Finished is read, its traffic secret not logged yet
    uint64_t switch_at = 0;          // stream offset of the record after that Finished
  } dir[2];
  bool waiting = false;              // hello read, key not (yet) in the log (TlsLayer::hold_for_keys)
  bool have_client_hello = false;
  bool decided = false;
  TlsRandom client_random{};
  TlsRandom server_random{};
  uint16_t version = 0;              // 0x0303, 0x0304
  bool encrypt_then_mac = false;     // the ServerHello's extension 22 (TLS 1.2 CBC suites)
  const Suite* suite = nullptr;
  std::vector<uint8_t> session_id;
  const char* side_name(int side) const { return side == 0 ? "client" : "server"; }
};

TlsLayer::TlsLayer(StreamSink& next, const TlsKeyLog& keys) : next_(next), keys_(keys) {}
TlsLayer::~TlsLayer() = default;

TlsLayer::Conn* TlsLayer::conn(const TcpConnection& c) {
  if (last_ && last_->tcp.id == c.id) return last_;
  auto it = conns_.find(c.id);
  if (it == conns_.end()) {
    on_open(c);
    it = conns_.find(c.id);
  }
  return last_ = it->second.get();
}

void TlsLayer::on_open(const TcpConnection& c) {
  auto k = std::make_unique<Conn>();
  k->tcp = c;
  last_ = nullptr;
  conns_[c.id] = std::move(k);
  next_.on_open(c);
}

void TlsLayer::on_data(const TcpConnection& t, StreamSide side, uint64_t offset, std::span<const uint8_t> bytes,
                       const PacketMeta& meta) {
  Conn& c = *conn(t);
  const int s = side == StreamSide::FromClient ? 0 : 1;
  switch (c.mode) {
    case Conn::Mode::Plain: next_.on_data(t, side, offset, bytes, meta); return;
    case Conn::Mode::Opaque: return;
    case Conn::Mode::Tls: records(c, s, bytes, meta); return;
    case Conn::Mode::Undecided: classify(c, s, offset, bytes, meta); return;
  }
}

// A connection is TLS when its client's first bytes are a handshake record
// holding a ClientHello (the handshake is in the capture), or when a side's
// first bytes are a chain of TLS record headers (it is not). Anything else
// passes through.
void TlsLayer::classify(Conn& c, int side, uint64_t offset, std::span<const uint8_t> bytes, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  if (d.early.empty()) d.early_offset = offset;
  d.early.insert(d.early.end(), bytes.begin(), bytes.end());
  const std::span<const uint8_t> b = d.early;
  if (b.size() < 6) return;
  const bool starts = d.early_offset == 0;
  const bool client_hello = side == 0 && starts && b[0] == kHandshake && b[1] == 3 && b[5] == 1 && looks_like_tls_record(b);
  bool records_only = false;
  if (!client_hello && looks_like_tls_record(b)) {
    // Two headers in a row (or one record that the segment ends in) is TLS.
    const size_t next = 5 + be16(b.data() + 3);
    records_only = next >= b.size() || looks_like_tls_record(b.subspan(next));
  }
  if (client_hello) {
    c.mode = Conn::Mode::Tls;
    ++stats_.connections;
    if (hold_ > 0) next_.on_tls(c.tcp, TlsEvent{TlsEvent::Kind::Pending, "TLS, waiting for its keys", {}}, meta);
    std::vector<uint8_t> first = std::move(d.early);
    d.early.clear();
    d.rec_offset = d.early_offset;
    records(c, side, first, meta);
    return;
  }
  if (records_only) {
    c.mode = Conn::Mode::Tls;
    ++stats_.connections;
    not_decrypted(c, "TLS whose handshake is not in the capture (it starts after it), so it cannot be decrypted", meta);
    return;
  }
  pass_through(c, meta, 1 - side);
}

// Not TLS: the bytes held while deciding go on, `first` side's first (it sent them first).
void TlsLayer::pass_through(Conn& c, const PacketMeta& meta, int first) {
  c.mode = Conn::Mode::Plain;
  for (int i : {first, 1 - first}) {
    Conn::Dir& e = c.dir[i];
    if (e.early.empty()) continue;
    std::vector<uint8_t> held = std::move(e.early);
    e.early = {};
    next_.on_data(c.tcp, i == 0 ? StreamSide::FromClient : StreamSide::FromServer, e.early_offset, held, meta);
  }
}

void TlsLayer::records(Conn& c, int side, std::span<const uint8_t> b, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  if (c.waiting) {
    hold(c, side, b, meta);
    return;
  }
  while (!b.empty() && !d.stopped && c.mode == Conn::Mode::Tls) {
    if (c.waiting) {  // the record just read was the ServerHello, and the key is not there yet
      hold(c, side, b, meta);
      return;
    }
    if (d.rec.empty() && b.size() >= 5) {
      if (!looks_like_tls_record(b)) {
        fail(c, side, d.rec_offset, not_a_header(b), meta);
        break;
      }
      const size_t total = 5 + be16(b.data() + 3);
      if (b.size() >= total) {
        const uint64_t at = d.rec_offset;
        d.rec_offset += total;
        record(c, side, b.first(total), at, meta);
        b = b.subspan(total);
        continue;
      }
    }
    size_t need = d.rec.size() < 5 ? 5 - d.rec.size() : 5 + be16(d.rec.data() + 3) - d.rec.size();
    const size_t take = std::min(need, b.size());
    d.rec.insert(d.rec.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(take));
    b = b.subspan(take);
    if (d.rec.size() == 5 && !looks_like_tls_record(d.rec)) {
      fail(c, side, d.rec_offset, not_a_header(d.rec), meta);
      break;
    }
    if (d.rec.size() >= 5 && d.rec.size() == 5u + be16(d.rec.data() + 3)) {
      std::vector<uint8_t> whole = std::move(d.rec);
      d.rec.clear();
      const uint64_t at = d.rec_offset;
      d.rec_offset += whole.size();
      record(c, side, whole, at, meta);
      if (d.rec.capacity() == 0 && !d.stopped) {  // keep the buffer for the next record
        whole.clear();
        d.rec.swap(whole);
      }
    }
  }
  flush(c, side, meta);
}

// One whole record at stream offset `at`.
bool TlsLayer::record(Conn& c, int side, std::span<const uint8_t> rec, uint64_t at, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  const uint8_t type = rec[0];
  const std::span<const uint8_t> payload = rec.subspan(5);
  const bool tls13 = c.version == 0x0304;
  if (type == kChangeCipherSpec) {
    // TLS 1.2: what this side sends next is protected. TLS 1.3 sends one for
    // middleboxes and means nothing by it.
    if (!tls13 && c.decided && !d.encrypted) d.encrypted = true;
    return true;
  }
  if (!d.encrypted) {
    if (type == kHandshake) handshake(c, side, payload, at + 5, meta);
    else if (type == kApplicationData && c.mode == Conn::Mode::Tls && !d.stopped)
      fail(c, side, at, "application data before the handshake set up its keys", meta);
    return true;
  }
  if (!d.protection.ready()) return false;
  const size_t base = d.out.size();
  if (const char* why = d.protection.open(rec.first(5), payload, d.out)) {
    fail(c, side, at,
         std::string("TLS record does not decrypt (") + why +
             "): the key log's secret for this connection is wrong, or the capture is damaged",
         meta);
    return false;
  }
  ++stats_.records;
  uint8_t inner = type;
  if (tls13) {
    // TLSInnerPlaintext: content, the real content type, zero padding.
    size_t end = d.out.size();
    while (end > base && d.out[end - 1] == 0) --end;
    if (end == base) {
      d.out.resize(base);
      fail(c, side, at, "TLS 1.3 record with no content type", meta);
      return false;
    }
    inner = d.out[end - 1];
    d.out.resize(end - 1);
  }
  if (inner != kApplicationData) {
    if (inner == kHandshake) {
      std::vector<uint8_t> hs(d.out.begin() + static_cast<std::ptrdiff_t>(base), d.out.end());
      d.out.resize(base);
      handshake(c, side, hs, at + 5, meta);
    } else {
      d.out.resize(base);  // alerts (close_notify), heartbeats
    }
  }
  if (d.change_keys && !d.stopped) {
    d.change_keys = false;
    d.switch_at = at + rec.size();
    if (d.epoch == 1 && !keys_.find(traffic_secret(side), c.client_random) && hold_ > 0) {
      d.switch_waits = true;  // the client has not logged it yet
      c.waiting = true;
      ++waiting_;
      return true;
    }
    return switch_keys(c, side, meta);
  }
  return true;
}

// RFC 8446 7.1/7.2: after Finished the first application traffic secret from
// the key log; after a KeyUpdate the next one, derived from the current.
bool TlsLayer::switch_keys(Conn& c, int side, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  d.switch_waits = false;
  std::vector<uint8_t> next(hash_length(*c.suite));
  if (d.epoch == 1) {
    const auto* s = keys_.find(traffic_secret(side), c.client_random);
    if (!s) {
      fail(c, side, d.switch_at,
           std::string("the key log has no ") + (side == 0 ? "CLIENT_TRAFFIC_SECRET_0" : "SERVER_TRAFFIC_SECRET_0") +
               " for client random " + hex_string(c.client_random),
           meta);
      return false;
    }
    next = *s;
  } else if (!expand_label(*c.suite, d.secret, "traffic upd", next.size(), next.data())) {
    fail(c, side, d.switch_at, "cannot derive the key update's secret (libcrypto)", meta);
    return false;
  }
  d.secret = std::move(next);
  ++d.epoch;
  uint8_t key[32], iv[12];
  const size_t klen = key_length(c.suite->cipher);
  if (!expand_label(*c.suite, d.secret, "key", klen, key) || !expand_label(*c.suite, d.secret, "iv", 12, iv) ||
      !d.protection.set(c.suite->cipher, true, {key, klen}, {iv, 12})) {
    fail(c, side, d.switch_at, "cannot set up the traffic keys (libcrypto)", meta);
    return false;
  }
  if (hold_ > 0 && d.epoch == 2 && c.dir[1 - side].epoch >= 2)
    next_.on_tls(c.tcp, TlsEvent{TlsEvent::Kind::Keyed, "keys found", {}}, meta);
  return true;
}

// Handshake bytes of one side, cut into messages.
void TlsLayer::handshake(Conn& c, int side, std::span<const uint8_t> data, uint64_t offset, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  d.hs.insert(d.hs.end(), data.begin(), data.end());
  size_t pos = 0;
  while (d.hs.size() - pos >= 4 && !d.stopped && c.mode == Conn::Mode::Tls) {
    const uint8_t* h = d.hs.data() + pos;
    const size_t len = static_cast<size_t>(h[1]) << 16 | static_cast<size_t>(h[2]) << 8 | h[3];
    if (len > kMaxHandshakeMessage) {
      fail(c, side, offset, "TLS handshake message of " + std::to_string(len) + " bytes (more than kwire follows)", meta);
      return;
    }
    if (d.hs.size() - pos < 4 + len) break;
    message(c, side, h[0], {h + 4, len}, offset, meta);
    pos += 4 + len;
  }
  d.hs.erase(d.hs.begin(), d.hs.begin() + static_cast<std::ptrdiff_t>(std::min(pos, d.hs.size())));
  if (c.mode != Conn::Mode::Tls) d.hs.clear();
}

bool TlsLayer::message(Conn& c, int side, uint8_t type, std::span<const uint8_t> body, uint64_t offset,
                       const PacketMeta& meta) {
  constexpr uint8_t kClientHello = 1, kServerHello = 2, kFinished = 20, kKeyUpdate = 24;
  Conn::Dir& d = c.dir[side];
  if (type == kClientHello && side == 0 && !c.have_client_hello) {
    if (body.size() < 34) {
      fail(c, side, offset, "ClientHello too short for its random", meta);
      return false;
    }
    std::memcpy(c.client_random.data(), body.data() + 2, 32);
    c.have_client_hello = true;
    return true;
  }
  if (type == kServerHello && side == 1 && !c.decided) {
    // legacy_version, random, session id, cipher suite, compression, extensions
    if (body.size() < 38 || body.size() < 35u + body[34] + 3) {
      fail(c, side, offset, "ServerHello too short", meta);
      return false;
    }
    if (std::memcmp(body.data() + 2, kRetryRandom, 32) == 0) return true;  // HelloRetryRequest: another ServerHello follows
    std::memcpy(c.server_random.data(), body.data() + 2, 32);
    size_t p = 34;
    const size_t sid = body[p++];
    c.session_id.assign(body.begin() + static_cast<std::ptrdiff_t>(p), body.begin() + static_cast<std::ptrdiff_t>(p + sid));
    p += sid;
    const uint16_t suite = be16(body.data() + p);
    p += 3;
    c.version = be16(body.data());
    if (p + 2 <= body.size()) {
      size_t end = std::min(body.size(), p + 2 + be16(body.data() + p));
      p += 2;
      while (p + 4 <= end) {
        const uint16_t ext = be16(body.data() + p), elen = be16(body.data() + p + 2);
        if (ext == 43 && elen == 2 && p + 6 <= end) c.version = be16(body.data() + p + 4);  // supported_versions
        if (ext == 22) c.encrypt_then_mac = true;  // RFC 7366
        p += 4 + elen;
      }
    }
    c.suite = suite_of(suite);
    c.decided = true;
    if (!c.have_client_hello) {
      not_decrypted(c, "TLS whose ClientHello is not in the capture, so its key cannot be found", meta);
      return false;
    }
    const std::string version = c.version == 0x0304 ? "TLS 1.3" : c.version == 0x0303 ? "TLS 1.2" : "TLS 1.1 or older";
    if (c.version != 0x0304 && c.version != 0x0303) {
      not_decrypted(c, version + ", which kwire does not decrypt (client random " + hex_string(c.client_random) + ")", meta);
      return false;
    }
    if (!c.suite || c.suite->tls13 != (c.version == 0x0304)) {
      not_decrypted(c, version + " with " + suite_name(suite) +
                           ", which kwire does not decrypt (AES-GCM, ChaCha20-Poly1305 and AES-CBC with HMAC suites only; client random " +
                           hex_string(c.client_random) + ")",
                    meta);
      return false;
    }
    if (!has_keys(c) && hold_ > 0) {
      c.waiting = true;
      ++waiting_;
      return true;
    }
    return decided(c, meta);
  }
  if (c.version == 0x0304 && d.encrypted) {
    if ((type == kFinished && d.epoch == 1) || (type == kKeyUpdate && d.epoch >= 2)) d.change_keys = true;
  }
  return true;
}

// The keys of a connection whose hellos are read. TLS 1.3: both sides'
// handshake keys, from the key log's handshake traffic secrets, at once
// (what follows the ServerHello is protected). TLS 1.2: the key block from
// the master secret, by client random or else by session id; each side's
// records are protected from its ChangeCipherSpec on.
bool TlsLayer::has_keys(const Conn& c) const {
  if (c.dir[0].epoch > 0 || c.dir[0].encrypted || c.dir[1].encrypted) {
    // Past the hellos: the traffic secrets a side waits for.
    for (int side : {0, 1}) {
      if (c.dir[side].switch_waits && !keys_.find(traffic_secret(side), c.client_random)) return false;
    }
    return true;
  }
  if (c.version == 0x0304)
    return keys_.find(TlsSecret::ClientHandshake, c.client_random) && keys_.find(TlsSecret::ServerHandshake, c.client_random);
  return keys_.find(TlsSecret::MasterSecret, c.client_random) || keys_.find_session(c.session_id);
}

std::string TlsLayer::missing_key(const Conn& c) const {
  const std::string missing = "no key for client random " + hex_string(c.client_random) + " in the TLS key log";
  if (c.version == 0x0304) return "TLS 1.3, " + missing + " (CLIENT_/SERVER_HANDSHAKE_TRAFFIC_SECRET)";
  return "TLS 1.2, " + missing + (c.session_id.empty() ? "" : " (nor for its session id)");
}

// The hellos are read and the key is there (or will never be): the verdict.
bool TlsLayer::decided(Conn& c, const PacketMeta& meta) {
  if (!keys_for(c, meta)) return false;
  ++stats_.decrypted;
  const char* version = c.version == 0x0304 ? "TLS 1.3 " : "TLS 1.2 ";
  next_.on_tls(c.tcp, TlsEvent{TlsEvent::Kind::Decrypted, version + std::string(c.suite->name), {}}, meta);
  if (hold_ > 0 && c.version != 0x0304) next_.on_tls(c.tcp, TlsEvent{TlsEvent::Kind::Keyed, "keys found", {}}, meta);
  return true;
}

void TlsLayer::hold(Conn& c, int side, std::span<const uint8_t> bytes, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  if (c.dir[0].held.size() + c.dir[1].held.size() + bytes.size() > hold_) {
    c.waiting = false;
    --waiting_;
    not_decrypted(c, missing_key(c) + " while " + std::to_string(hold_ >> 10) + " KiB of it waited", meta);
    return;
  }
  d.held.insert(d.held.end(), bytes.begin(), bytes.end());
}

void TlsLayer::keys_added(const PacketMeta& meta) {
  if (waiting_ == 0) return;
  for (auto& [id, k] : conns_) {
    Conn& c = *k;
    if (!c.waiting || !has_keys(c)) continue;
    c.waiting = false;
    --waiting_;
    const bool past_hellos = c.dir[0].epoch > 0 || c.dir[0].encrypted || c.dir[1].encrypted;
    if (!past_hellos && !decided(c, meta)) continue;
    for (int side : {0, 1}) {
      if (c.dir[side].switch_waits && !switch_keys(c, side, meta)) continue;
    }
    for (int side : {0, 1}) {  // requests first: their responses find them
      std::vector<uint8_t> held = std::move(c.dir[side].held);
      c.dir[side].held = {};
      if (!held.empty() && c.mode == Conn::Mode::Tls) records(c, side, held, meta);
    }
  }
}

bool TlsLayer::keys_for(Conn& c, const PacketMeta& meta) {
  const Suite& s = *c.suite;
  const size_t klen = key_length(s.cipher);
  if (c.version == 0x0304) {
    const auto* ch = keys_.find(TlsSecret::ClientHandshake, c.client_random);
    const auto* sh = keys_.find(TlsSecret::ServerHandshake, c.client_random);
    if (!ch || !sh) {
      not_decrypted(c, missing_key(c), meta);
      return false;
    }
    for (int side : {0, 1}) {
      Conn::Dir& d = c.dir[side];
      d.secret = side == 0 ? *ch : *sh;
      uint8_t key[32], iv[12];
      if (d.secret.size() != hash_length(s) || !expand_label(s, d.secret, "key", klen, key) ||
          !expand_label(s, d.secret, "iv", 12, iv) || !d.protection.set(s.cipher, true, {key, klen}, {iv, 12})) {
        not_decrypted(c, "TLS 1.3, the key log's handshake secret for client random " + hex_string(c.client_random) +
                             " does not fit " + s.name,
                      meta);
        return false;
      }
      d.epoch = 1;
      d.encrypted = true;
    }
    return true;
  }
  const auto* master = keys_.find(TlsSecret::MasterSecret, c.client_random);
  if (!master) master = keys_.find_session(c.session_id);
  if (!master) {
    not_decrypted(c, missing_key(c), meta);
    return false;
  }
  if (is_cbc(s.cipher)) {
    // RFC 5246 6.3: client and server MAC keys, then client and server write keys (the IVs are per record).
    const size_t mlen = s.mac_length;
    uint8_t block[2 * 48 + 2 * 32];
    if (!key_block(s, *master, c.server_random, c.client_random, 2 * mlen + 2 * klen, block) ||
        !c.dir[0].protection.set_cbc({block + 2 * mlen, klen}, {block, mlen}, s.mac, c.encrypt_then_mac) ||
        !c.dir[1].protection.set_cbc({block + 2 * mlen + klen, klen}, {block + mlen, mlen}, s.mac, c.encrypt_then_mac)) {
      not_decrypted(c, "TLS 1.2, cannot derive the keys (libcrypto)", meta);
      return false;
    }
    return true;
  }
  const size_t ivlen = s.cipher == Cipher::ChaCha20Poly1305 ? 12 : 4;
  uint8_t block[2 * 32 + 2 * 12];
  if (!key_block(s, *master, c.server_random, c.client_random, 2 * klen + 2 * ivlen, block) ||
      !c.dir[0].protection.set(s.cipher, false, {block, klen}, {block + 2 * klen, ivlen}) ||
      !c.dir[1].protection.set(s.cipher, false, {block + klen, klen}, {block + 2 * klen + ivlen, ivlen})) {
    not_decrypted(c, "TLS 1.2, cannot derive the keys (libcrypto)", meta);
    return false;
  }
  return true;
}

void TlsLayer::not_decrypted(Conn& c, const std::string& why, const PacketMeta& meta) {
  c.mode = Conn::Mode::Opaque;
  ++stats_.undecrypted;
  if (c.waiting) {
    c.waiting = false;
    --waiting_;
  }
  for (Conn::Dir& d : c.dir) {
    d.early = {};
    d.rec = {};
    d.hs = {};
    d.held = {};
    d.out.clear();
  }
  next_.on_tls(c.tcp, TlsEvent{TlsEvent::Kind::NotDecrypted, why, {}}, meta);
}

void TlsLayer::fail(Conn& c, int side, uint64_t offset, const std::string& why, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  if (d.stopped) return;
  flush(c, side, meta);  // what decrypted before the failure is delivered
  d.stopped = true;
  d.rec = {};
  d.hs = {};
  ++stats_.errors;
  std::string where = std::string(c.side_name(side)) + " TLS record at stream offset " + std::to_string(offset);
  next_.on_tls(c.tcp, TlsEvent{TlsEvent::Kind::Failed, why + "; this direction is not decoded further", std::move(where)},
               meta);
}

void TlsLayer::flush(Conn& c, int side, const PacketMeta& meta) {
  Conn::Dir& d = c.dir[side];
  if (d.out.empty()) return;
  next_.on_data(c.tcp, side == 0 ? StreamSide::FromClient : StreamSide::FromServer, d.plain_offset, d.out, meta);
  d.plain_offset += d.out.size();
  d.out.clear();
}

void TlsLayer::on_gap(const TcpConnection& t, StreamSide side, uint64_t offset, uint64_t length,
                      const PacketMeta& meta) {
  Conn& c = *conn(t);
  const int s = side == StreamSide::FromClient ? 0 : 1;
  if (c.mode == Conn::Mode::Undecided) pass_through(c, meta);  // too few bytes to tell: not TLS as far as kwire knows
  if (c.mode == Conn::Mode::Plain) {
    next_.on_gap(t, side, offset, length, meta);
  } else if (c.mode == Conn::Mode::Tls) {
    fail(c, s, offset,
         std::to_string(length) + " bytes are missing from the capture, and the TLS records after them cannot be followed",
         meta);
  }
}

void TlsLayer::on_close(const TcpConnection& t) {
  auto it = conns_.find(t.id);
  if (it != conns_.end()) {
    Conn& c = *it->second;
    if (c.mode == Conn::Mode::Undecided) {
      pass_through(c, PacketMeta{});
    } else if (c.mode == Conn::Mode::Tls && !c.decided) {
      not_decrypted(c, "TLS whose handshake the capture does not finish", PacketMeta{});
    } else if (c.waiting) {
      not_decrypted(c, missing_key(c) + " by the time the connection ended", PacketMeta{});
    } else if (c.mode == Conn::Mode::Tls) {
      for (int side : {0, 1}) {
        Conn::Dir& d = c.dir[side];
        if (d.rec.empty() || d.stopped) continue;
        const std::string of = d.rec.size() >= 5 ? " of " + std::to_string(5 + be16(d.rec.data() + 3)) : "";
        fail(c, side, d.rec_offset,
             "the connection ends " + std::to_string(d.rec.size()) + " bytes into a TLS record" + of +
                 " bytes (cut short, or the capture stopped)",
             PacketMeta{});
      }
    }
    if (last_ == it->second.get()) last_ = nullptr;
    conns_.erase(it);
  }
  next_.on_close(t);
}

void TlsLayer::on_end() { next_.on_end(); }

void TlsLayer::on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) {
  next_.on_error(meta, where, reason);
}

}  // namespace kwire
