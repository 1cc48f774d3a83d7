#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dissector/protocol/program.hpp"

namespace kwire::cli {

// Options every command that decodes understands: --spec-dir DIR, --overlay NAME.
// Consumes them from args; returns false with a message on error.
bool apply_spec_options(std::vector<std::string>& args, ProgramSet& ps, std::string& error);
// The help lines for those options and for -h/--help, shared by every command.
extern const char* const kSpecOptionsHelp;
extern const char* const kHelpOptionHelp;

// "9092,9093" into ports; false with a message on a bad list.
bool parse_ports(const std::string& s, std::set<uint16_t>& ports, std::string& error);

int decode_command(std::vector<std::string> args);
int specs_command(std::vector<std::string> args);
int record_command(std::vector<std::string> args);
int replay_command(std::vector<std::string> args);
int latency_command(std::vector<std::string> args);
int streams_command(std::vector<std::string> args);

}  // namespace kwire::cli
