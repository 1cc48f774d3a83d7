// Implemented by the build-time generated programs.gen.cpp.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

#include "dissector/protocol/program.hpp"

namespace kwire::generated {
ProgramTables release_tables();
// The overlays shipped in specs/overlays/, by directory name.
std::vector<std::pair<std::string_view, ProgramTables>> overlay_tables();
}  // namespace kwire::generated
