// kwire streams: what each Kafka Streams group did on the wire.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/frame_printer.hpp"
#include "dissector/filter/filter.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"
#include "streams/streams_model.hpp"
#include "streams/streams_report.hpp"

namespace kwire::cli {

namespace {

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

struct StreamsArgs {
  ProgramSet ps = ProgramSet::build_release();
  std::string file, html, dot;
  bool json = false;
  std::shared_ptr<const filter::Filter> selection;
  SessionOptions session;
  CaptureOptions capture;
};

Command streams_table(StreamsArgs& a) {
  Command c;
  c.name = "streams";
  c.brief = "streams -r FILE";
  c.summary =
      "what each Kafka Streams group did: epochs, rebalances, tasks, anomalies; --html FILE for a timeline and "
      "topology page";
  c.usage = {{"kwire streams -r FILE|- [options]", ""}};
  c.description = {
      "Reports what each Kafka Streams group (streams rebalance protocol) did in a capture: members and their "
      "epochs, rebalances and their causes, task movements, statuses, errors, topology description pushes, "
      "describes, deletes and anomalies."};
  c.options = capture_file_options(a.file, a.session, a.capture);
  c.options.push_back(value({"-T"}, "text|json", "report format (default text)",
                            [&a](const std::string& v, std::string&) { a.json = v == "json"; return true; }));
  c.options.push_back(display_filter_option(
      a.ps, a.selection,
      "the model sees only the messages a display filter selects (docs/decode.md); request.PATH keeps exchanges "
      "whole, e.g. -Y 'request.body.memberId == \"X\"' for one member's heartbeats"));
  c.options.push_back(value({"--html"}, "FILE", "also write a self-contained HTML page (timeline and topology graph)",
                            [&a](const std::string& v, std::string&) { a.html = v; return true; }, ValueKind::File));
  c.options.push_back(value({"--dot"}, "FILE", "also write the topology graph as Graphviz DOT",
                            [&a](const std::string& v, std::string&) { a.dot = v; return true; }, ValueKind::File));
  for (auto& o : spec_options(a.ps)) c.options.push_back(std::move(o));
  c.options.push_back(help_flag());
  c.exit = {{"0", "reported"},
            {"1", "the capture cannot be read or is damaged (the report covers everything before the damage), or an "
                  "output file cannot be written"},
            {"2", "bad usage"}};
  return c;
}

}  // namespace

Command streams_cli() { return detached(streams_table); }

int streams_command(std::vector<std::string> args) {
  StreamsArgs a;
  if (const int rc = parse(streams_table(a), args); rc >= 0) return rc;
  std::string error;
  const ProgramSet& ps = a.ps;
  const std::string &file = a.file, &html = a.html, &dot = a.dot;
  const bool json = a.json;
  SessionOptions& session = a.session;
  CaptureOptions& capture = a.capture;
  const std::shared_ptr<const filter::Filter>& selection = a.selection;

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
