#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire {
struct SessionOptions;
struct CaptureOptions;
}  // namespace kwire

namespace kwire::cli {

// -h, --help: the parser prints the command's help and exits 0.
Option help_flag();
// --overlay NAME and --spec-dir DIR, applied to ps before every other option.
// `use` says what the specs serve where that is not the whole command.
std::vector<Option> spec_options(ProgramSet& ps, const std::string& use = "");
// -r, -p, -f and --tls-keylog of the commands that read a capture file.
std::vector<Option> capture_file_options(std::string& file, SessionOptions& session, CaptureOptions& capture);
// --guess: responses whose request is not in the capture, decoded by trying versions.
Option guess_option(SessionOptions& session);

// "9092,9093" into ports; false with a message on a bad list.
bool parse_ports(const std::string& s, std::set<uint16_t>& ports, std::string& error);

int decode_command(std::vector<std::string> args);
int specs_command(std::vector<std::string> args);
int record_command(std::vector<std::string> args);
int replay_command(std::vector<std::string> args);
int latency_command(std::vector<std::string> args);
int streams_command(std::vector<std::string> args);
int monitor_command(std::vector<std::string> args);

}  // namespace kwire::cli
