#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/frame_printer.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"

namespace kwire::cli {

namespace {

const char* kDecodeHelp =
    "usage: kwire decode -r FILE|- [options]\n"
    "  -r FILE            pcap or pcapng file to read; - reads standard input\n"
    "  -p PORTS           Kafka ports, comma separated (default 9092); Kafka on other\n"
    "                     ports is recognised from its requests\n"
    "  -f FILTER          BPF capture filter applied while reading\n"
    "  --tls-keylog FILE  TLS key log (SSLKEYLOGFILE format) to decrypt TLS connections with;\n"
    "                     repeatable. Secrets blocks of a pcapng file are read without it\n"
    "  -c N               stop printing after N messages\n"
    "  --guess            decode responses whose request was not captured by trying versions\n";

const char* kDecodeExit =
    "exit status: 0 decoded; 1 the capture file cannot be read, or is damaged (everything\n"
    "before the damage is decoded and printed; stderr says where); 2 bad usage\n";

}  // namespace

bool parse_ports(const std::string& s, std::set<uint16_t>& ports, std::string& error) {
  ports.clear();
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      int p = std::stoi(item, &used);
      if (used != item.size() || p <= 0 || p > 65535) throw std::out_of_range("port");
      ports.insert(static_cast<uint16_t>(p));
    } catch (...) {
      error = "bad port '" + item + "' in -p " + s;
      return false;
    }
  }
  if (ports.empty()) { error = "-p needs at least one port"; return false; }
  return true;
}

int decode_command(std::vector<std::string> args) {
  ProgramSet ps = ProgramSet::build_release();
  std::string error;
  if (!apply_spec_options(args, ps, error)) {
    std::cerr << "kwire decode: " << error << "\n";
    return 2;
  }
  std::string file;
  SessionOptions session;
  CaptureOptions capture;
  OutputOptions out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](const char* what) -> const std::string* {
      if (i + 1 >= args.size()) { std::cerr << "kwire decode: " << a << " needs " << what << "\n"; return nullptr; }
      return &args[++i];
    };
    const int used = parse_output_option(args, i, ps, out, error);
    if (used < 0) { std::cerr << "kwire decode: " << error << "\n"; return 2; }
    if (used > 0) continue;
    if (a == "-h" || a == "--help") { std::cout << kDecodeHelp << kSpecOptionsHelp << kOutputOptionsHelp << kHelpOptionHelp << kDecodeExit; return 0; }
    else if (a == "-r") { auto v = next("a file"); if (!v) return 2; file = *v; }
    else if (a == "-p") {
      auto v = next("ports"); if (!v) return 2;
      if (!parse_ports(*v, session.ports, error)) { std::cerr << "kwire decode: " << error << "\n"; return 2; }
    }
    else if (a == "-f") { auto v = next("a filter"); if (!v) return 2; capture.bpf_filter = *v; }
    else if (a == "--tls-keylog") { auto v = next("a key log file"); if (!v) return 2; capture.tls_keylogs.push_back(*v); }
    else if (a == "-c") {
      auto v = next("a count"); if (!v) return 2;
      try { out.limit = std::stoll(*v); } catch (...) { out.limit = -2; }
      if (out.limit < 0) { std::cerr << "kwire decode: -c needs a non-negative number, not " << *v << "\n"; return 2; }
    }
    else if (a == "--guess") session.guess = true;
    else { std::cerr << "kwire decode: unknown option " << a << "\n" << kDecodeHelp << kOutputOptionsHelp; return 2; }
  }
  if (file.empty()) { std::cerr << "kwire decode: -r FILE is required\n" << kDecodeHelp; return 2; }
  if (!check_output_options(out, error)) { std::cerr << "kwire decode: " << error << "\n"; return 2; }

  FramePrinter printer(ps, out, "kwire decode");
  printer.set_where(file == "-" ? "standard input" : file);
  KafkaSessions sessions(ps, session, printer);
  CaptureStats cstats;
  if (!read_capture_file(file, capture, sessions, cstats, error)) {
    std::cerr << "kwire decode: " << error << "\n";
    return 1;
  }
  printer.finish(sessions.stats());
  return cstats.file_damaged ? 1 : 0;
}

}  // namespace kwire::cli
