// Implemented by the build-time generated programs.gen.cpp.
#pragma once
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "dissector/protocol/program.hpp"

namespace kwire::generated {
ProgramTables release_tables();
// Decoders of release_tables()'s structs, by index (decoders.gen.cpp).
std::span<const CompiledStruct> compiled_structs();
// The overlays shipped in specs/overlays/, by directory name.
std::vector<std::pair<std::string_view, ProgramTables>> overlay_tables();
}  // namespace kwire::generated
