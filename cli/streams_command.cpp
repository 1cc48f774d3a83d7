// kwire streams: what each Kafka Streams group did on the wire.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "dissector/filter/filter.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"
#include "streams/streams_model.hpp"
#include "streams/streams_report.hpp"

namespace kwire::cli {

namespace {

const char* kStreamsHelp =
    "usage: kwire streams -r FILE|- [options]\n"
    "Reports what each Kafka Streams group (streams rebalance protocol) did in a capture:\n"
    "members and their epochs, rebalances and their causes, task movements, statuses,\n"
    "errors, topology description pushes, describes, deletes and anomalies.\n"
    "  -r FILE            pcap or pcapng file to read; - reads standard input\n"
    "  -p PORTS           Kafka ports, comma separated (default 9092); Kafka on other\n"
    "                     ports is recognised from its requests\n"
    "  -f FILTER          BPF capture filter applied while reading\n"
    "  --tls-keylog FILE  TLS key log (SSLKEYLOGFILE format) to decrypt TLS connections with;\n"
    "                     repeatable. Secrets blocks of a pcapng file are read without it\n"
    "  -T text|json       report format (default text)\n"
    "  -Y FILTER          the model sees only the messages a display filter selects\n"
    "                     (docs/decode.md); request.PATH keeps exchanges whole, e.g.\n"
    "                     -Y 'request.body.memberId == \"X\"' for one member's heartbeats\n"
    "  --html FILE        also write a self-contained HTML page (timeline and topology graph)\n"
    "  --dot FILE         also write the topology graph as Graphviz DOT\n"
    "  --overlay NAME     use a shipped spec overlay (see 'kwire specs')\n"
    "  --spec-dir DIR     load more specs; they replace messages of the same name\n"
    "  -h, --help         this help\n"
    "exit status: 0 reported; 1 the capture cannot be read or is damaged (the report covers\n"
    "everything before the damage), or an output file cannot be written; 2 bad usage\n";

// Passes the messages a display filter selects on to the model (the selector
// sees every message, for request.* conditions), and every connection end.
class Selected : public FrameHandler {
 public:
  Selected(const filter::Filter& f, FrameHandler& next) : selector_(f), next_(next) {}
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    if (selector_.select(ctx, f)) next_.on_frame(ctx, f);
  }
  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override {
    next_.on_skip(ctx, length, reason);
  }
  void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override {
    next_.on_capture_error(meta, where, reason);
  }
  void on_connection_end(const TcpConnection& c) override {
    selector_.connection_end(c.id);
    next_.on_connection_end(c);
  }

 private:
  filter::FilterSelector selector_;
  FrameHandler& next_;
};

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "kwire streams: cannot write " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace

int streams_command(std::vector<std::string> args) {
  ProgramSet ps = ProgramSet::build_release();
  std::string error;
  if (!apply_spec_options(args, ps, error)) {
    std::cerr << "kwire streams: " << error << "\n";
    return 2;
  }
  std::string file, html, dot;
  bool json = false;
  std::optional<filter::Filter> selection;
  SessionOptions session;
  CaptureOptions capture;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](const char* what) -> const std::string* {
      if (i + 1 >= args.size()) { std::cerr << "kwire streams: " << a << " needs " << what << "\n"; return nullptr; }
      return &args[++i];
    };
    if (a == "-h" || a == "--help") { std::cout << kStreamsHelp; return 0; }
    else if (a == "-r") { auto v = next("a file"); if (!v) return 2; file = *v; }
    else if (a == "-p") {
      auto v = next("ports"); if (!v) return 2;
      if (!parse_ports(*v, session.ports, error)) { std::cerr << "kwire streams: " << error << "\n"; return 2; }
    }
    else if (a == "-f") { auto v = next("a filter"); if (!v) return 2; capture.bpf_filter = *v; }
    else if (a == "--tls-keylog") { auto v = next("a key log file"); if (!v) return 2; capture.tls_keylogs.push_back(*v); }
    else if (a == "-T") {
      auto v = next("text or json"); if (!v) return 2;
      if (*v == "json") json = true;
      else if (*v != "text") { std::cerr << "kwire streams: -T takes text or json, not " << *v << "\n"; return 2; }
    }
    else if (a == "-Y") {
      auto v = next("a display filter"); if (!v) return 2;
      filter::CompileError err;
      auto f = filter::Filter::compile(*v, ps, err);
      if (!f) { std::cerr << "kwire streams: -Y: " << err.format() << "\n"; return 2; }
      selection.emplace(std::move(*f));
    }
    else if (a == "--html") { auto v = next("a file"); if (!v) return 2; html = *v; }
    else if (a == "--dot") { auto v = next("a file"); if (!v) return 2; dot = *v; }
    else { std::cerr << "kwire streams: unknown option " << a << "\n" << kStreamsHelp; return 2; }
  }
  if (file.empty()) { std::cerr << "kwire streams: -r FILE is required\n" << kStreamsHelp; return 2; }

  streams::StreamsModel model(ps);
  std::optional<Selected> selected;
  if (selection) selected.emplace(*selection, model);
  KafkaSessions sessions(ps, session, selected ? static_cast<FrameHandler&>(*selected) : model);
  CaptureStats cstats;
  const std::string where = file == "-" ? "standard input" : file;
  if (!read_capture_file(file, capture, sessions, cstats, error)) {
    std::cerr << "kwire streams: " << error << "\n";
    return 1;
  }
  for (const auto& e : model.capture_errors()) std::cerr << "kwire streams: " << where << ": " << e << "\n";
  const streams::Summary& s = model.finish();
  if (json) std::cout << streams::json_report(s).dump() << "\n";
  else std::cout << streams::text_report(s);
  std::cout.flush();
  int status = cstats.file_damaged ? 1 : 0;
  if (!dot.empty() && !write_file(dot, streams::topology_dot(s))) status = 1;
  if (!html.empty() && !write_file(html, streams::html_report(s, where))) status = 1;
  return status;
}

}  // namespace kwire::cli
