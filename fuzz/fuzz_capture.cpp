// The capture input path: the input is a pcap or pcapng file, read by
// read_capture_file (libpcap, link layers, IP/TCP, reassembly) into
// KafkaSessions (framing, request/response matching, decoding), and every
// frame is rendered as `kwire decode` would. libpcap reads files by name, so
// the input goes to a temporary file first.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "dissector/output/output.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"

namespace {

using namespace kwire;

class Render : public FrameHandler {
 public:
  explicit Render(const ProgramSet& ps) : ps_(ps) {}
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    out_.clear();
    append_summary(out_, ps_, f, &ctx);
    write_tree(out_, ps_, f, 2);
    write_json(out_, ps_, f, ctx);
  }
  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override {
    out_.clear();
    append_skip(out_, ctx, length, reason);
    write_skip_json(out_, ctx, length, reason);
  }
  void on_capture_error(const PacketMeta&, const std::string& where, const std::string& reason) override {
    out_.clear();
    out_ += where;
    out_ += reason;
  }

 private:
  const ProgramSet& ps_;
  TextBuffer out_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ProgramSet& ps = ProgramSet::release();
  static const std::string path = "/tmp/kwire-fuzz-capture-" + std::to_string(::getpid()) + ".pcap";
  static const struct Cleanup {
    ~Cleanup() { std::remove(path.c_str()); }
  } cleanup;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);

  Render render(ps);
  SessionOptions opts;
  opts.ports = {9092, 42721};
  opts.guess = size % 2 == 0;  // both ways of handling unmatched responses
  KafkaSessions sessions(ps, opts, render);
  CaptureStats stats;
  std::string error;
  read_capture_file(path, CaptureOptions{}, sessions, stats, error);
  return 0;
}
