// Writes kwire.lua: the generated tables (fields, descriptors, structs,
// messages of the compiled programs) followed by the Lua decoder runtime.
#pragma once

#include <string>

#include "dissector/protocol/program.hpp"
#include "dissector/wireshark/wsgen_model.hpp"

namespace kwire::wireshark {

bool write_lua(const std::string& path, const std::string& runtime_path, const ProgramSet& ps,
               const FieldModel& model, std::string& error);

}  // namespace kwire::wireshark
