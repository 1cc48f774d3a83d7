// kwire latency: the LatencyTracker's report of a capture file.
#include <climits>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/frame_printer.hpp"
#include "pipeline/capture_file.hpp"

namespace kwire::cli {

namespace {

struct LatencyArgs {
  ProgramSet ps = ProgramSet::build_release();
  std::string file;
  SessionOptions session;
  CaptureOptions capture;
  OutputOptions out;
  LatencyArgs() {
    out.limit = 0;
    out.latency = true;
  }
};

Command latency_table(LatencyArgs& a) {
  Command c;
  c.name = "latency";
  c.brief = "latency -r FILE";
  c.summary =
      "request-to-response times per api version, connection and broker, and the slowest exchanges";
  c.usage = {{"kwire latency -r FILE|- [options]", ""}};
  c.description = {
      "Request-to-response times of the Kafka messages in a capture: per api and version the count, p50, p90, p99 "
      "and max (ms; nearest rank), the slowest exchanges with their frame numbers, and the same per connection and "
      "per broker (its address, and its node id when a Metadata or DescribeCluster answer in the capture names it). "
      "A message's time is that of the packet that completed it."};
  c.options = capture_file_options(a.file, a.session, a.capture);
  c.options.push_back(value({"-T"}, "text|json",
                            "output format; json: one {\"latency\":{..}} object with the arrays apis, slowest, connections and brokers",
                            [&a](const std::string& v, std::string&) { a.out.json = v == "json"; return true; }));
  c.options.push_back(api_option(a.ps, a.out.apis, "only these APIs (names in any case)"));
  c.options.push_back(display_filter_option(
      a.ps, a.out.filter,
      "only exchanges whose request or response matches a display filter (docs/decode.md; request.PATH reaches a "
      "response's request)"));
  c.options.push_back(count({"--top"}, "N", "how many slowest exchanges to list (default 10)", 0, LLONG_MAX,
                            [&a](long long n) { a.out.latency_top = static_cast<size_t>(n); }));
  c.options.push_back(guess_option(a.session));
  for (auto& o : spec_options(a.ps)) c.options.push_back(std::move(o));
  c.options.push_back(help_flag());
  c.exit = {{"0", "done"},
            {"1", "the capture file cannot be read, or is damaged (what came before the damage is counted; stderr "
                  "says where)"},
            {"2", "bad usage"}};
  return c;
}

}  // namespace

Command latency_cli() { return detached(latency_table); }

int latency_command(std::vector<std::string> args) {
  LatencyArgs a;
  if (const int rc = parse(latency_table(a), args); rc >= 0) return rc;
  std::string error;
  FramePrinter printer(a.ps, a.out, "kwire latency");
  printer.set_where(a.file == "-" ? "standard input" : a.file);
  KafkaSessions sessions(a.ps, a.session, printer);
  CaptureStats cstats;
  if (!read_capture_file(a.file, a.capture, sessions, cstats, error)) {
    std::cerr << "kwire latency: " << error << "\n";
    return 1;
  }
  printer.finish(sessions.stats());
  return cstats.file_damaged ? 1 : 0;
}

}  // namespace kwire::cli
