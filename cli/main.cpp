// kwire: see, record and replay Apache Kafka traffic.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "dissector/protocol/overlays.hpp"

namespace kwire::cli {

const char* const kSpecOptionsHelp =
    "  --overlay NAME     use a shipped spec overlay (see 'kwire specs')\n"
    "  --spec-dir DIR     load more specs; they replace messages of the same name\n";
const char* const kHelpOptionHelp = "  -h, --help         this help\n";

bool apply_spec_options(std::vector<std::string>& args, ProgramSet& ps, std::string& error) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--spec-dir" || a == "--overlay") {
      if (i + 1 >= args.size()) { error = a + " needs an argument"; return false; }
      const std::string& v = args[++i];
      if (a == "--spec-dir") {
        std::string why;
        if (!load_overlay_dir(ps, v, why)) { error = "cannot load specs from " + v + ":\n" + why; return false; }
      } else if (!enable_builtin_overlay(ps, v)) {
        error = "no overlay named " + v + " (shipped:";
        for (const auto& n : builtin_overlay_names()) error += " " + n;
        error += ")";
        return false;
      }
    } else {
      rest.push_back(a);
    }
  }
  args = std::move(rest);
  return true;
}

}  // namespace kwire::cli

static void usage(std::ostream& out) {
  out << "kwire " << KWIRE_VERSION << ": see, record and replay Apache Kafka traffic\n\n"
         "usage: kwire <command> [options]\n\n"
         "commands:\n"
         "  decode -r FILE   decode Kafka traffic in a pcap/pcapng file\n"
         "  record -i IFACE  capture Kafka traffic live into pcapng (or re-filter a file with -r)\n"
         "  replay -r FILE --target HOST:PORT\n"
         "                   re-send the capture's client sessions to a broker, compare the answers\n"
         "  streams -r FILE  what each Kafka Streams group did: epochs, rebalances, tasks,\n"
         "                   anomalies; --html FILE for a timeline and topology page\n"
         "  latency -r FILE  request-to-response times per api version and connection, and the\n"
         "                   slowest exchanges\n"
         "  specs [NAME]     list the APIs kwire knows, or show a message's wire layout\n\n"
         "Run 'kwire <command> --help' for its options; 'kwire --version' prints the version.\n";
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "--version" || cmd == "version") {
    std::cout << "kwire " << KWIRE_VERSION << "\n";
    return 0;
  }
  if (cmd == "decode") return kwire::cli::decode_command(std::move(args));
  if (cmd == "record") return kwire::cli::record_command(std::move(args));
  if (cmd == "replay") return kwire::cli::replay_command(std::move(args));
  if (cmd == "streams") return kwire::cli::streams_command(std::move(args));
  if (cmd == "specs") return kwire::cli::specs_command(std::move(args));
  if (cmd == "latency") return kwire::cli::latency_command(std::move(args));
  std::cerr << "kwire: unknown command '" << cmd << "'\n";
  usage(std::cerr);
  return 2;
}
