// The key log reader, the pcapng secrets blocks, and TLS 1.2 CBC records
// built by hand. Decryption of whole connections is checked against tshark's
// on the real TLS captures (tests/tls/tls_oracle_test.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "recorder/pcapng_writer.hpp"
#include "tls/keylog.hpp"
#include "tls/tls_layer.hpp"

namespace kwire {
namespace {

std::vector<uint8_t> hex(std::string_view s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(std::string(s.substr(i, 2)), nullptr, 16)));
  return out;
}

TlsRandom random_of(std::string_view s) {
  TlsRandom r{};
  const auto b = hex(s);
  std::copy(b.begin(), b.end(), r.begin());
  return r;
}

const std::string kRandom(64, 'a');
const std::string kOtherRandom = std::string(62, '0') + "0B";
const std::string kMaster = std::string(94, '1') + "2f";
const std::string kSecret32 = std::string(64, '3');
const std::string kSecret48 = std::string(96, '4');

TEST(TlsKeyLog, ReadsEveryFormAndNamesTheLinesItSkips) {
  const std::string text =
      "# comment\n"
      "\n"
      "CLIENT_RANDOM " + kRandom + " " + kMaster + "\r\n" +
      "RSA Session-ID:0102ab Master-Key:" + kMaster + "\n" +
      "CLIENT_HANDSHAKE_TRAFFIC_SECRET " + kOtherRandom + " " + kSecret32 + "\n" +
      "SERVER_TRAFFIC_SECRET_0 " + kOtherRandom + " " + kSecret48 + "\n" +
      "EXPORTER_SECRET " + kOtherRandom + " " + kSecret32 + "\n" +
      "CLIENT_RANDOM " + kRandom.substr(2) + " " + kMaster + "\n" +   // line 8: short random
      "CLIENT_RANDOM " + kRandom + " zz" + kMaster.substr(2) + "\n" + // line 9: not hex
      "SOMETHING_ELSE " + kRandom + " " + kSecret32 + "\n";            // line 10: unknown label
  TlsKeyLog keys;
  std::vector<std::string> warnings;
  keys.add_text(text, "keys.log", warnings);

  const auto* master = keys.find(TlsSecret::MasterSecret, random_of(kRandom));
  ASSERT_NE(master, nullptr);
  EXPECT_EQ(*master, hex(kMaster));
  const std::vector<uint8_t> sid = {0x01, 0x02, 0xab};
  ASSERT_NE(keys.find_session(sid), nullptr);
  EXPECT_EQ(*keys.find_session(sid), hex(kMaster));
  ASSERT_NE(keys.find(TlsSecret::ClientHandshake, random_of(kOtherRandom)), nullptr);
  EXPECT_EQ(*keys.find(TlsSecret::ClientHandshake, random_of(kOtherRandom)), hex(kSecret32));
  ASSERT_NE(keys.find(TlsSecret::ServerTraffic0, random_of(kOtherRandom)), nullptr);
  EXPECT_EQ(keys.find(TlsSecret::ServerTraffic0, random_of(kOtherRandom))->size(), 48u);
  EXPECT_EQ(keys.find(TlsSecret::ServerHandshake, random_of(kOtherRandom)), nullptr);
  EXPECT_EQ(keys.find(TlsSecret::MasterSecret, random_of(kOtherRandom)), nullptr);

  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_TRUE(warnings[0].starts_with("keys.log line 8: CLIENT_RANDOM with a client random that is not 32 bytes")) << warnings[0];
  EXPECT_TRUE(warnings[1].starts_with("keys.log line 9: CLIENT_RANDOM with a secret that is not hex")) << warnings[1];
  EXPECT_TRUE(warnings[2].starts_with("keys.log line 10: unknown label 'SOMETHING_ELSE'")) << warnings[2];
  for (const auto& w : warnings) {
    EXPECT_EQ(w.find(kMaster.substr(2)), std::string::npos) << "a secret in: " << w;
    EXPECT_EQ(w.find(kSecret32), std::string::npos) << "a secret in: " << w;
  }
}

TEST(TlsKeyLog, AMissingFileIsAnErrorThatNamesIt) {
  TlsKeyLog keys;
  std::vector<std::string> warnings;
  std::string error;
  EXPECT_FALSE(keys.add_file("/nonexistent/keys.log", warnings, error));
  EXPECT_TRUE(error.starts_with("cannot open TLS key log /nonexistent/keys.log: ")) << error;
}

// The secrets blocks editcap wrote into NAME-secrets.pcapng hold every line of
// the key log the client's agent wrote (NAME.keys), read here by splitting.
TEST(TlsKeyLog, PcapngSecretsBlocksHoldTheClientsKeyLog) {
  const std::string dir = std::string(KWIRE_SOURCE_DIR) + "/captures/tls/";
  int captures = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".keys")) continue;
    const std::string base = dir + name.substr(0, name.size() - 5);
    TlsKeyLog keys;
    std::vector<std::string> warnings;
    std::string error;
    EXPECT_GE(read_pcapng_secrets(base + "-secrets.pcapng", keys, warnings, error), 1) << base << ": " << error;
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    std::ifstream in(dir + name);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      std::istringstream w(line);
      std::string a, b, c;
      w >> a >> b >> c;
      if (a == "RSA") {
        const auto* m = keys.find_session(hex(b.substr(b.find(':') + 1)));
        ASSERT_NE(m, nullptr) << line.substr(0, 40);
        EXPECT_EQ(*m, hex(c.substr(c.find(':') + 1)));
      } else {
        const TlsSecret kind = a == "CLIENT_RANDOM"                     ? TlsSecret::MasterSecret
                               : a == "CLIENT_HANDSHAKE_TRAFFIC_SECRET" ? TlsSecret::ClientHandshake
                               : a == "SERVER_HANDSHAKE_TRAFFIC_SECRET" ? TlsSecret::ServerHandshake
                               : a == "CLIENT_TRAFFIC_SECRET_0"         ? TlsSecret::ClientTraffic0
                               : a == "SERVER_TRAFFIC_SECRET_0"         ? TlsSecret::ServerTraffic0
                                                                        : TlsSecret::Count;
        if (kind == TlsSecret::Count) continue;
        const auto* s = keys.find(kind, random_of(b));
        ASSERT_NE(s, nullptr) << line.substr(0, 40);
        EXPECT_EQ(*s, hex(c));
      }
      ++lines;
    }
    EXPECT_GT(lines, 0) << name;
    ++captures;
  }
  EXPECT_GE(captures, 3);
}

TEST(TlsKeyLog, ACaptureWithoutSecretsBlocksAddsNothing) {
  TlsKeyLog keys;
  std::vector<std::string> warnings;
  std::string error;
  EXPECT_EQ(read_pcapng_secrets(std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng", keys, warnings, error), 0);
  EXPECT_TRUE(keys.empty());
  EXPECT_EQ(read_pcapng_secrets(std::string(KWIRE_SOURCE_DIR) + "/captures/tls/none.pcapng", keys, warnings, error), -1);
  EXPECT_TRUE(error.starts_with("cannot open ")) << error;
}

// The secrets blocks kwire record writes: read back by the reader that the
// test above holds to editcap's blocks, in every file of a rotation.
TEST(TlsKeyLog, SecretsBlocksTheWriterWritesAreReadBackInEveryFile) {
  const std::string dir = ::testing::TempDir() + "kwire-dsb-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  PcapngWriterOptions o;
  o.path = dir + "/out.pcapng";
  o.rotate_bytes = 2000;
  o.start_ns = 1'796'038'200'000'000'000;
  std::string error;
  auto w = PcapngWriter::open(o, error);
  ASSERT_TRUE(w) << error;
  const uint32_t lo = w->add_interface({.linktype = 1, .name = "lo"});
  const std::string line = "CLIENT_RANDOM " + kRandom + " " + kMaster + "\n";
  ASSERT_TRUE(w->write_tls_secrets(line, error)) << error;
  const std::vector<uint8_t> packet(600, 0x42);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(w->write_packet(lo, o.start_ns + i, packet, 600, "", error)) << error;
  ASSERT_TRUE(w->close({}, error)) << error;
  ASSERT_GE(w->files().size(), 2u);
  for (const auto& f : w->files()) {
    TlsKeyLog keys;
    std::vector<std::string> warnings, texts;
    EXPECT_EQ(read_pcapng_secrets(f, keys, warnings, error, &texts), 1) << f;
    ASSERT_EQ(texts.size(), 1u) << f;
    EXPECT_EQ(texts[0], line);
    ASSERT_NE(keys.find(TlsSecret::MasterSecret, random_of(kRandom)), nullptr) << f;
  }
  std::filesystem::remove_all(dir);
}

// TLS 1.2 CBC records made with Python's `cryptography` package (AES-CBC and
// HMAC from it, record layout per RFC 5246 6.2.3.2 and RFC 7366), not by kwire:
//   MAC then encrypt, AES-128, HMAC-SHA256, sequence number 1, application data:
//     key 10..1f, MAC key 40..5f, IV a0..af (bytes counting up),
//     content "kwire: one CBC record" (21 bytes), MAC 32 bytes, padding 10 (11 bytes of 0x0a).
//   The same with one padding byte changed (0x0b) before encryption.
//   Encrypt then MAC, AES-256, HMAC-SHA1, sequence number 7: key 20..3f, MAC
//     key 60..73, IV c0..cf, content "encrypt_then_mac", padding 15 (16 bytes);
//     the MAC over seq, header with the length of IV + ciphertext, IV + ciphertext.
std::vector<uint8_t> counting(uint8_t from, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(from + i);
  return v;
}

const std::string kMteRecord =
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafa19272bde16c14a292fa42b30857f74e0276c951b6560c91cef5309b5a626d7c416ea1d49caa97b7dc"
    "3552cdca520f7b9ffd18006c6ca9a4fd258b34dfcafd7a";
const std::string kMteBadPadding =
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafa19272bde16c14a292fa42b30857f74e0276c951b6560c91cef5309b5a626d7c416ea1d49caa97b7dc"
    "3552cdca520f7be3410a21702a26ab91e0869505f92fea";
const std::string kEtmRecord =
    "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfafd5658eb0b054ec2caaedab502ef0969130d438e80a724b6f7cc11b203f0a43cf51659ab4d70d"
    "4350f8dff3691fb58ed176f20a";

std::vector<uint8_t> header_for(size_t length) {
  return {23, 3, 3, static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length)};
}

std::string text(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

TEST(TlsCbc, OpensAMacThenEncryptRecordBuiltByHand) {
  TlsCbcProtection p;
  ASSERT_TRUE(p.set(counting(0x10, 16), counting(0x40, 32), TlsCbcProtection::Mac::Sha256, false));
  const auto rec = hex(kMteRecord);
  ASSERT_EQ(rec.size(), 80u);
  std::vector<uint8_t> out = {'>'};
  EXPECT_EQ(p.open(1, header_for(rec.size()), rec, out), nullptr);
  EXPECT_EQ(text(out), ">kwire: one CBC record");
}

TEST(TlsCbc, AWrongSequenceNumberOrKeyIsABadMacAndAddsNothing) {
  TlsCbcProtection p;
  ASSERT_TRUE(p.set(counting(0x10, 16), counting(0x40, 32), TlsCbcProtection::Mac::Sha256, false));
  const auto rec = hex(kMteRecord);
  std::vector<uint8_t> out;
  EXPECT_STREQ(p.open(0, header_for(rec.size()), rec, out), "bad record MAC");
  EXPECT_TRUE(out.empty());
  auto flipped = rec;
  flipped[20] ^= 0x01;  // the first block of content: it decrypts to other bytes
  EXPECT_STREQ(p.open(1, header_for(rec.size()), flipped, out), "bad record MAC");
  EXPECT_TRUE(out.empty());
  TlsCbcProtection other;
  ASSERT_TRUE(other.set(counting(0x10, 16), counting(0x41, 32), TlsCbcProtection::Mac::Sha256, false));
  EXPECT_STREQ(other.open(1, header_for(rec.size()), rec, out), "bad record MAC");
  EXPECT_TRUE(out.empty());
}

TEST(TlsCbc, BadPaddingAndLengthsThatDoNotFitAreNamed) {
  TlsCbcProtection p;
  ASSERT_TRUE(p.set(counting(0x10, 16), counting(0x40, 32), TlsCbcProtection::Mac::Sha256, false));
  const auto bad = hex(kMteBadPadding);
  std::vector<uint8_t> out;
  EXPECT_STREQ(p.open(1, header_for(bad.size()), bad, out), "bad padding");
  EXPECT_TRUE(out.empty());
  auto rec = hex(kMteRecord);
  rec.pop_back();  // not whole blocks
  const char* why = p.open(1, header_for(rec.size()), rec, out);
  ASSERT_NE(why, nullptr);
  EXPECT_STREQ(why, "the record's length does not fit CBC blocks and its MAC");
  const std::vector<uint8_t> iv_only = counting(0, 16);
  EXPECT_NE(p.open(1, header_for(16), iv_only, out), nullptr);
  EXPECT_TRUE(out.empty());
}

TEST(TlsCbc, OpensAnEncryptThenMacRecordBuiltByHand) {
  TlsCbcProtection p;
  ASSERT_TRUE(p.set(counting(0x20, 32), counting(0x60, 20), TlsCbcProtection::Mac::Sha1, true));
  const auto rec = hex(kEtmRecord);
  ASSERT_EQ(rec.size(), 16u + 32u + 20u);
  std::vector<uint8_t> out;
  EXPECT_EQ(p.open(7, header_for(rec.size()), rec, out), nullptr);
  EXPECT_EQ(text(out), "encrypt_then_mac");
  // The same record read as MAC-then-encrypt does not open.
  TlsCbcProtection mte;
  ASSERT_TRUE(mte.set(counting(0x20, 32), counting(0x60, 20), TlsCbcProtection::Mac::Sha1, false));
  out.clear();
  EXPECT_NE(mte.open(7, header_for(rec.size()), rec, out), nullptr);
  EXPECT_TRUE(out.empty());
  // A changed ciphertext byte fails the MAC before anything is decrypted.
  auto flipped = rec;
  flipped[30] ^= 0x80;
  EXPECT_STREQ(p.open(7, header_for(rec.size()), flipped, out), "bad record MAC");
}

TEST(TlsCbc, KeysThatDoNotFitTheSuiteAreRefused) {
  TlsCbcProtection p;
  EXPECT_FALSE(p.set(counting(0, 24), counting(0, 20), TlsCbcProtection::Mac::Sha1, false));   // AES-192: no such suite
  EXPECT_FALSE(p.set(counting(0, 16), counting(0, 32), TlsCbcProtection::Mac::Sha384, false)); // SHA-384 MAC key is 48
}

}  // namespace
}  // namespace kwire
