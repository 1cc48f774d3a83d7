// Spec overlays: KIP drafts and experimental builds that replace messages of
// the release. Shipped overlays are compiled in and enabled by name; any
// directory of spec files can be loaded at run time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/program.hpp"

namespace kwire {

std::vector<std::string> builtin_overlay_names();
// Enables a shipped overlay (specs/overlays/NAME). False if there is none.
bool enable_builtin_overlay(ProgramSet& ps, std::string_view name);
// Loads, validates and compiles every spec in `dir`; on failure `error`
// lists each problem with its file, field and reason, and `ps` is unchanged.
bool load_overlay_dir(ProgramSet& ps, const std::string& dir, std::string& error);

}  // namespace kwire
