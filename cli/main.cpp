// kwire: see, record and replay Apache Kafka traffic.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "dissector/protocol/overlays.hpp"
#include "dissector/protocol/session.hpp"
#include "recorder/capture.hpp"

namespace kwire::cli {

Option help_flag() {
  Option o{{"-h", "--help"}, "", "this help", nullptr};
  o.kind = ValueKind::Flag;
  return o;
}

std::vector<Option> spec_options(ProgramSet& ps, const std::string& use) {
  const std::string prefix = use.empty() ? "" : use + ": ";
  Option overlay = value(
      {"--overlay"}, "NAME", prefix + "use a shipped spec overlay (see 'kwire specs')",
      [&ps](const std::string& v, std::string& error) {
        if (enable_builtin_overlay(ps, v)) return true;
        error = "no overlay named " + v + " (shipped:";
        for (const auto& n : builtin_overlay_names()) error += " " + n;
        error += ")";
        return false;
      });
  Option dir = value(
      {"--spec-dir"}, "DIR", prefix + "load more specs; they replace messages of the same name",
      [&ps](const std::string& v, std::string& error) {
        std::string why;
        if (load_overlay_dir(ps, v, why)) return true;
        error = "cannot load specs from " + v + ":\n" + why;
        return false;
      },
      ValueKind::Dir);
  overlay.early = dir.early = true;
  return {overlay, dir};
}

std::vector<Option> capture_file_options(std::string& file, SessionOptions& session, CaptureOptions& capture) {
  Option read = value({"-r"}, "FILE", "pcap or pcapng file to read; - reads standard input",
                      [&file](const std::string& v, std::string&) { file = v; return true; }, ValueKind::File);
  read.required = true;
  return {
      read,
      value({"-p"}, "PORTS",
            "Kafka ports, comma separated (default 9092); Kafka on other ports is recognised from its requests",
            [&session](const std::string& v, std::string& error) { return parse_ports(v, session.ports, error); }),
      value({"-f"}, "FILTER", "BPF capture filter applied while reading",
            [&capture](const std::string& v, std::string&) { capture.bpf_filter = v; return true; }),
      value({"--tls-keylog"}, "FILE",
            "TLS key log (SSLKEYLOGFILE format) to decrypt TLS connections with; repeatable. Secrets blocks of a "
            "pcapng file are read without it",
            [&capture](const std::string& v, std::string&) { capture.tls_keylogs.push_back(v); return true; },
            ValueKind::File),
  };
}

Option guess_option(SessionOptions& session) {
  return flag({"--guess"}, "decode responses whose request was not captured by trying versions",
              [&session] { session.guess = true; });
}

namespace {

struct TopArgs {
  bool version = false;
  std::string generate;
  std::vector<std::string> operands;
};

Command top_cli(TopArgs& a) {
  Command c;
  c.summary = "see, record and replay Apache Kafka traffic";
  c.usage = {{"kwire <command> [options]", ""}};
  c.options = {
      flag({"--version"}, "print kwire's version", [&a] { a.version = true; }),
      value({"--generate"}, "man|complete-bash",
            "write the man pages (kwire.1, kwire-COMMAND.1 and their .gz) into the folder named after it "
            "(default: the current one), or the bash completion into the file named after it (default: standard "
            "output); both are made from the tables that parse kwire's options",
            [&a](const std::string& v, std::string&) { a.generate = v; return true; }),
      help_flag(),
  };
  for (const auto& sub : {decode_cli(), record_cli(), monitor_cli(), replay_cli(), streams_cli(), latency_cli(), specs_cli()})
    c.commands.emplace_back(sub.brief, sub.summary);
  c.notes = {"Run 'kwire <command> --help' for its options."};
  c.set_operand = [&a](const std::string& v, std::string&) { a.operands.push_back(v); return true; };
  return c;
}

void usage(std::ostream& out) {
  TopArgs a;
  out << "kwire " << KWIRE_VERSION << ": see, record and replay Apache Kafka traffic\n\n";
  print_help(top_cli(a), out);
}

}  // namespace

std::vector<Command> all_commands() {
  auto a = std::make_shared<TopArgs>();
  Command top = top_cli(*a);
  top.keep = a;
  return {top, decode_cli(), record_cli(), monitor_cli(), replay_cli(), streams_cli(), latency_cli(), specs_cli()};
}

}  // namespace kwire::cli

int main(int argc, char** argv) {
  using namespace kwire::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  if (cmd == "version") args[0] = "--version";
  if (!cmd.starts_with("-") && cmd != "version") {
    args.erase(args.begin());
    if (cmd == "decode") return decode_command(std::move(args));
    if (cmd == "record") return record_command(std::move(args));
    if (cmd == "replay") return replay_command(std::move(args));
    if (cmd == "streams") return streams_command(std::move(args));
    if (cmd == "specs") return specs_command(std::move(args));
    if (cmd == "latency") return latency_command(std::move(args));
    if (cmd == "monitor") return monitor_command(std::move(args));
    std::cerr << "kwire: unknown command '" << cmd << "'\n";
    usage(std::cerr);
    return 2;
  }
  TopArgs a;
  const Command top = top_cli(a);
  if (std::find(args.begin(), args.end(), "-h") != args.end() || std::find(args.begin(), args.end(), "--help") != args.end()) {
    usage(std::cout);
    return 0;
  }
  if (const int rc = parse(top, args); rc >= 0) return rc;
  if (a.version && a.generate.empty() && a.operands.empty()) {
    std::cout << "kwire " << KWIRE_VERSION << "\n";
    return 0;
  }
  if (!a.generate.empty() && !a.version && a.operands.size() <= 1) {
    std::vector<std::string> g = {a.generate};
    g.insert(g.end(), a.operands.begin(), a.operands.end());
    return generate_command(g);
  }
  std::cerr << "kwire: give a command, --version or --generate KIND ('kwire --help' lists them)\n";
  return 2;
}
