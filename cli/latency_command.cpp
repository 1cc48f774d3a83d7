// kwire latency: the LatencyTracker's report of a capture file.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/frame_printer.hpp"
#include "pipeline/capture_file.hpp"

namespace kwire::cli {

namespace {

const char* kLatencyHelp =
    "usage: kwire latency -r FILE|- [options]\n"
    "Request-to-response times of the Kafka messages in a capture: per api and version the\n"
    "count, p50, p90, p99 and max (ms; nearest rank), the slowest exchanges with their frame\n"
    "numbers, and the same per connection. A message's time is that of the packet that\n"
    "completed it.\n"
    "  -r FILE            pcap or pcapng file to read; - reads standard input\n"
    "  -p PORTS           Kafka ports, comma separated (default 9092); Kafka on other\n"
    "                     ports is recognised from its requests\n"
    "  -f FILTER          BPF capture filter applied while reading\n"
    "  --tls-keylog FILE  TLS key log (SSLKEYLOGFILE format) to decrypt TLS connections with;\n"
    "                     repeatable. Secrets blocks of a pcapng file are read without it\n"
    "  -T text|json       output format; json: {\"latency\":{\"apis\":[..],\"slowest\":[..],\"connections\":[..]}}\n"
    "  --api NAME|KEY,..  only these APIs (names in any case)\n"
    "  -Y FILTER          only exchanges whose request or response matches a display filter\n"
    "                     (docs/decode.md; request.PATH reaches a response's request)\n"
    "  --top N            how many slowest exchanges to list (default 10)\n"
    "  --guess            decode responses whose request was not captured by trying versions\n";

}  // namespace

int latency_command(std::vector<std::string> args) {
  ProgramSet ps = ProgramSet::build_release();
  std::string error;
  auto fail = [](const std::string& why) {
    std::cerr << "kwire latency: " << why << "\n";
    return 2;
  };
  if (!apply_spec_options(args, ps, error)) return fail(error);
  std::string file;
  SessionOptions session;
  CaptureOptions capture;
  OutputOptions out;
  out.limit = 0;
  out.latency = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << kLatencyHelp << kSpecOptionsHelp << kHelpOptionHelp
                << "exit status: 0 done; 1 the capture file cannot be read, or is damaged (what came before\n"
                   "the damage is counted; stderr says where); 2 bad usage\n";
      return 0;
    }
    if (a == "-T" || a == "--api" || a == "-Y") {
      const int used = parse_output_option(args, i, ps, out, error);
      if (used < 0) return fail(error);
      continue;
    }
    if (a == "-r" || a == "-p" || a == "-f" || a == "--top" || a == "--tls-keylog") {
      if (i + 1 >= args.size()) return fail(a + " needs a value");
      const std::string* v = &args[++i];
      if (a == "-r") file = *v;
      else if (a == "-p") { if (!parse_ports(*v, session.ports, error)) return fail(error); }
      else if (a == "-f") capture.bpf_filter = *v;
      else if (a == "--tls-keylog") capture.tls_keylogs.push_back(*v);
      else {
        try {
          size_t used = 0;
          const long long n = std::stoll(*v, &used);
          if (used != v->size() || n < 0) throw std::out_of_range("top");
          out.latency_top = static_cast<size_t>(n);
        } catch (...) {
          return fail("--top needs a non-negative number, not " + *v);
        }
      }
      continue;
    }
    if (a == "--guess") { session.guess = true; continue; }
    std::cerr << "kwire latency: unknown option " << a << "\n" << kLatencyHelp;
    return 2;
  }
  if (out.fields) return fail("-T takes text or json");
  if (file.empty()) {
    std::cerr << "kwire latency: -r FILE is required\n" << kLatencyHelp;
    return 2;
  }
  FramePrinter printer(ps, out, "kwire latency");
  printer.set_where(file == "-" ? "standard input" : file);
  KafkaSessions sessions(ps, session, printer);
  CaptureStats cstats;
  if (!read_capture_file(file, capture, sessions, cstats, error)) {
    std::cerr << "kwire latency: " << error << "\n";
    return 1;
  }
  printer.finish(sessions.stats());
  return cstats.file_damaged ? 1 : 0;
}

}  // namespace kwire::cli
