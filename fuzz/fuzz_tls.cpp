// The TLS layer and the key log parser: the input is a key log and the
// payload chunks of one TCP connection (see tools/fuzz-seeds: u16 key log
// length, the key log, then chunks of u8 side | u16 length | bytes; side bit 1
// set is a gap of that length instead). The connection goes through TlsLayer
// into KafkaSessions, and the plaintext the layer hands on must come in order,
// each direction's offsets contiguous from 0.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "dissector/output/output.hpp"
#include "dissector/protocol/session.hpp"
#include "recorder/capture.hpp"
#include "tls/keylog.hpp"
#include "tls/tls_layer.hpp"

namespace {

using namespace kwire;

class Discard : public FrameHandler {
 public:
  void on_frame(const FrameContext&, const Frame&) override {}
  void on_skip(const FrameContext&, uint64_t, const std::string&) override {}
  void on_capture_error(const PacketMeta&, const std::string&, const std::string&) override {}
};

// Checks what the TLS layer hands on, then passes it to the sessions.
class Checked : public StreamSink {
 public:
  explicit Checked(StreamSink& next) : next_(next) {}
  void on_open(const TcpConnection& c) override { next_.on_open(c); }
  void on_data(const TcpConnection& c, StreamSide side, uint64_t offset, std::span<const uint8_t> bytes,
               const PacketMeta& meta) override {
    uint64_t& expect = next_offset_[side == StreamSide::FromClient ? 0 : 1];
    if (offset != expect || bytes.empty()) std::abort();
    expect += bytes.size();
    next_.on_data(c, side, offset, bytes, meta);
  }
  void on_gap(const TcpConnection& c, StreamSide side, uint64_t offset, uint64_t length, const PacketMeta& meta) override {
    uint64_t& expect = next_offset_[side == StreamSide::FromClient ? 0 : 1];
    if (offset != expect) std::abort();
    expect += length;
    next_.on_gap(c, side, offset, length, meta);
  }
  void on_close(const TcpConnection& c) override { next_.on_close(c); }
  void on_end() override { next_.on_end(); }
  void on_error(const PacketMeta& m, const std::string& w, const std::string& r) override { next_.on_error(m, w, r); }
  void on_tls(const TcpConnection& c, const TlsEvent& e, const PacketMeta& m) override {
    if (e.text.empty()) std::abort();
    next_.on_tls(c, e, m);
  }

 private:
  StreamSink& next_;
  uint64_t next_offset_[2] = {0, 0};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ProgramSet& ps = ProgramSet::release();
  if (size < 2) return 0;
  const size_t keylen = std::min<size_t>(size - 2, static_cast<size_t>(data[0] << 8 | data[1]));
  TlsKeyLog keys;
  std::vector<std::string> warnings;
  keys.add_text(std::string_view(reinterpret_cast<const char*>(data + 2), keylen), "fuzz", warnings);
  size_t pos = 2 + keylen;

  Discard discard;
  SessionOptions opts;
  opts.ports = {9093};
  KafkaSessions sessions(ps, opts, discard);
  Checked checked(sessions);
  TlsLayer tls(checked, keys);
  TcpConnection conn;
  conn.id = 1;
  conn.client.addr[0] = 127;
  conn.client.port = 40000;
  conn.server.addr[0] = 127;
  conn.server.port = 9093;
  conn.saw_syn = true;
  tls.on_open(conn);
  uint64_t offset[2] = {0, 0};
  PacketMeta meta;
  while (pos + 3 <= size) {
    const uint8_t flags = data[pos];
    const size_t len = static_cast<size_t>(data[pos + 1] << 8 | data[pos + 2]);
    pos += 3;
    const int side = flags & 1;
    const StreamSide s = side ? StreamSide::FromServer : StreamSide::FromClient;
    ++meta.number;
    if (flags & 2) {
      tls.on_gap(conn, s, offset[side], len + 1, meta);
      offset[side] += len + 1;
      continue;
    }
    const size_t n = std::min(len, size - pos);
    if (n == 0) continue;
    tls.on_data(conn, s, offset[side], {data + pos, n}, meta);
    offset[side] += n;
    pos += n;
  }
  tls.on_close(conn);
  tls.on_end();
  return 0;
}
