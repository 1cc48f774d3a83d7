#include <climits>
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

struct DecodeArgs {
  ProgramSet ps = ProgramSet::build_release();
  std::string file;
  SessionOptions session;
  CaptureOptions capture;
  OutputOptions out;
};

Command decode_table(DecodeArgs& a) {
  Command c;
  c.name = "decode";
  c.brief = "decode -r FILE";
  c.summary = "decode Kafka traffic in a pcap/pcapng file";
  c.usage = {{"kwire decode -r FILE|- [options]", ""}};
  c.options = capture_file_options(a.file, a.session, a.capture);
  c.options.push_back(count({"-c"}, "N", "stop printing after N messages", 0, LLONG_MAX,
                            [&a](long long n) { a.out.limit = n; }));
  c.options.push_back(guess_option(a.session));
  for (auto& o : spec_options(a.ps)) c.options.push_back(std::move(o));
  for (auto& o : output_options(a.ps, a.out)) c.options.push_back(std::move(o));
  c.options.push_back(help_flag());
  c.exit = {{"0", "decoded"},
            {"1", "the capture file cannot be read, or is damaged (everything before the damage is decoded and "
                  "printed; stderr says where)"},
            {"2", "bad usage"}};
  return c;
}

}  // namespace

Command decode_cli() { return detached(decode_table); }

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
  DecodeArgs a;
  if (const int rc = parse(decode_table(a), args); rc >= 0) return rc;
  std::string error;
  if (!check_output_options(a.out, error)) { std::cerr << "kwire decode: " << error << "\n"; return 2; }
  const ProgramSet& ps = a.ps;
  const std::string& file = a.file;
  const OutputOptions& out = a.out;

  FramePrinter printer(ps, out, "kwire decode");
  printer.set_where(file == "-" ? "standard input" : file);
  KafkaSessions sessions(ps, a.session, printer);
  CaptureStats cstats;
  if (!read_capture_file(file, a.capture, sessions, cstats, error)) {
    std::cerr << "kwire decode: " << error << "\n";
    return 1;
  }
  printer.finish(sessions.stats());
  return cstats.file_damaged ? 1 : 0;
}

}  // namespace kwire::cli
