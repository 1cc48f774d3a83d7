// Implemented by the build-time generated programs.gen.cpp.
#pragma once
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "dissector/protocol/program.hpp"

namespace kwire::generated {
// The release's tables, read in place (programs.gen.cpp).
ProgramTablesView release_tables();
// Decoders of release_tables()'s structs, by index (decoders.gen.cpp).
std::span<const CompiledStruct> compiled_structs();
// The overlays shipped in specs/overlays/, by directory name.
std::vector<std::pair<std::string_view, ProgramTablesView>> overlay_tables();
}  // namespace kwire::generated
