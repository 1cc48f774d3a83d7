#include "dissector/protocol/overlays.hpp"

#include <memory>

#include "dissector/codegen/compiler.hpp"
#include "dissector/protocol/generated.hpp"

namespace kwire {

std::vector<std::string> builtin_overlay_names() {
  std::vector<std::string> names;
  for (const auto& [name, tables] : generated::overlay_tables()) names.emplace_back(name);
  return names;
}

bool enable_builtin_overlay(ProgramSet& ps, std::string_view name) {
  for (const auto& [n, tables] : generated::overlay_tables()) {
    if (n == name) {
      ps.add(tables);
      return true;
    }
  }
  return false;
}

bool load_overlay_dir(ProgramSet& ps, const std::string& dir, std::string& error) {
  auto loaded = spec::load_spec_dir(dir);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) error += e.str() + "\n";
    return false;
  }
  auto compiler = std::make_shared<SpecCompiler>("overlay " + dir, true);
  size_t apis = 0;
  for (const auto& m : loaded.messages) {
    compiler->add(m);
    apis += m.is_api();
  }
  if (apis == 0) {
    error = dir + ": no request or response specs found\n";
    return false;
  }
  ps.add(compiler->tables(), compiler);
  return true;
}

}  // namespace kwire
