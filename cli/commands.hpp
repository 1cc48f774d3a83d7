#pragma once

#include <string>
#include <vector>

#include "dissector/protocol/program.hpp"

namespace kwire::cli {

// Options every command that decodes understands: --spec-dir DIR, --overlay NAME.
// Consumes them from args; returns false with a message on error.
bool apply_spec_options(std::vector<std::string>& args, ProgramSet& ps, std::string& error);

int decode_command(std::vector<std::string> args);
int specs_command(std::vector<std::string> args);

}  // namespace kwire::cli
