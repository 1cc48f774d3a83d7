#include <algorithm>
#include <iostream>
#include <map>

#include "cli/commands.hpp"
#include "dissector/output/output.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/overlays.hpp"

namespace kwire::cli {

namespace {

struct SpecsArgs {
  ProgramSet ps = ProgramSet::build_release();
  std::string name;
  int version = -1;
  bool list_versions = false;
};

Command specs_table(SpecsArgs& a) {
  Command c;
  c.name = "specs";
  c.brief = "specs [NAME]";
  c.summary = "list the APIs kwire knows, or show a message's wire layout";
  c.usage = {{"kwire specs [options]", "list every API and version"},
             {"kwire specs --versions [options]", "one line per api version: API_KEY VERSION SOURCE"},
             {"kwire specs NAME [-v VERSION] [options]", "wire layout of a message"}};
  c.description = {
      "NAME is an api name (StreamsGroupHeartbeat, any case), a message name (StreamsGroupHeartbeatResponse) or an "
      "api key; without -v the newest version."};
  c.options = {
      flag({"--versions"}, "one line per api version kwire decodes: API_KEY VERSION SOURCE",
           [&a] { a.list_versions = true; }),
      count({"-v"}, "VERSION", "the version of NAME to show (default: the newest)", 0, 32767,
            [&a](long long n) { a.version = static_cast<int>(n); }),
  };
  for (auto& o : spec_options(a.ps)) c.options.push_back(std::move(o));
  c.options.push_back(help_flag());
  c.operand = "NAME";
  c.set_operand = [&a](const std::string& v, std::string& error) {
    if (!a.name.empty()) {
      error = "one NAME at a time, not " + a.name + " and " + v;
      return false;
    }
    a.name = v;
    return true;
  };
  return c;
}

}  // namespace

Command specs_cli() { return detached(specs_table); }

int specs_command(std::vector<std::string> args) {
  SpecsArgs a;
  if (const int rc = parse(specs_table(a), args); rc >= 0) return rc;
  const ProgramSet& ps = a.ps;
  const std::string& name = a.name;
  const int version = a.version;
  const bool list_versions = a.list_versions;

  if (list_versions) {
    // For scripts: "0 2 kafka 3.9.1", every api version kwire decodes.
    std::vector<const MessageProgram*> all;
    for (const auto& m : ps.messages())
      if (m.direction == Direction::Request && ps.find(m.api_key, m.version, m.direction) == &m) all.push_back(&m);
    std::sort(all.begin(), all.end(), [](auto* a, auto* b) {
      return std::pair(a->api_key, a->version) < std::pair(b->api_key, b->version);
    });
    for (const auto* m : all) std::cout << m->api_key << ' ' << m->version << ' ' << m->origin << '\n';
    return 0;
  }

  if (name.empty()) {
    // api key -> (name, request versions, origin)
    std::map<int, std::vector<const MessageProgram*>> apis;
    for (const auto& m : ps.messages())
      if (m.direction == Direction::Request && ps.find(m.api_key, m.version, m.direction) == &m)
        apis[m.api_key].push_back(&m);
    printf("%-4s %-44s %-9s %s\n", "key", "api", "versions", "source");
    for (auto& [key, vs] : apis) {
      std::sort(vs.begin(), vs.end(), [](auto* a, auto* b) { return a->version < b->version; });
      std::string versions = std::to_string(vs.front()->version);
      if (vs.back()->version != vs.front()->version) (versions += '-') += std::to_string(vs.back()->version);
      std::string origin(vs.back()->origin);
      if (vs.back()->unstable) origin += " (v" + std::to_string(vs.back()->version) + " unstable)";
      // Versions from other sources (an older release's specs for the ones
      // the pinned release dropped): "; v0-2 from kafka 3.9.1".
      for (size_t i = 0; i < vs.size();) {
        size_t j = i;
        while (j + 1 < vs.size() && vs[j + 1]->origin == vs[i]->origin && vs[j + 1]->version == vs[j]->version + 1) ++j;
        if (vs[i]->origin != vs.back()->origin) {
          (origin += "; v") += std::to_string(vs[i]->version);
          if (j > i) (origin += '-') += std::to_string(vs[j]->version);
          (origin += " from ") += vs[i]->origin;
        }
        i = j + 1;
      }
      printf("%-4d %-44s %-9s %s\n", key, std::string(vs.front()->api_name).c_str(), versions.c_str(), origin.c_str());
    }
    // Structures that travel serialized inside bytes fields, decoded there.
    std::map<std::string_view, std::pair<int, int>> data;  // name -> version range
    for (const auto& d : ps.data()) {
      auto [it, fresh] = data.try_emplace(d.name, d.version, d.version);
      it->second.first = std::min<int>(it->second.first, d.version);
      it->second.second = std::max<int>(it->second.second, d.version);
    }
    std::cout << "\nPayloads decoded inside bytes fields:\n";
    std::vector<std::pair<std::string, std::string>> rows;   // where, what: aligned once all are known
    for (const auto& p : nested_payloads()) {
      const MessageProgram* m = ps.find_api(std::to_string(p.api_key));
      std::string where = std::string(m ? m->api_name : "?") + (p.direction == Direction::Request ? " request " : " response ") +
                          std::string(p.path);
      std::string what(p.payload);
      if (auto it = data.find(p.payload); it != data.end()) {
        // Appended piece by piece: "-" + std::to_string(...) here made GCC 12
        // at -O3 warn falsely of an overlapping copy (-Wrestrict).
        what += " v";
        what += std::to_string(it->second.first);
        if (it->second.second != it->second.first) {
          what += '-';
          what += std::to_string(it->second.second);
        }
      } else {
        what = "a whole " + what + " (header, body)";
      }
      if (p.consumer_protocol) what += ", when the protocol type is consumer";
      rows.emplace_back(std::move(where), std::move(what));
    }
    size_t width = 0;
    for (const auto& r : rows) width = std::max(width, r.first.size());
    for (const auto& [where, what] : rows) printf("  %-*s  %s\n", static_cast<int>(width), where.c_str(), what.c_str());
    std::cout << "\n" << apis.size() << " APIs. Shipped overlays (--overlay NAME):";
    for (const auto& n : builtin_overlay_names()) std::cout << " " << n;
    std::cout << "\n";
    return 0;
  }

  // Which messages: a message name picks one direction, an api name or key both.
  std::vector<Direction> dirs{Direction::Request, Direction::Response};
  std::string api = name;
  if (name.size() > 7 && name.substr(name.size() - 7) == "Request") { dirs = {Direction::Request}; api = name.substr(0, name.size() - 7); }
  else if (name.size() > 8 && name.substr(name.size() - 8) == "Response") { dirs = {Direction::Response}; api = name.substr(0, name.size() - 8); }
  const MessageProgram* any = ps.find_api(api);
  if (!any) {
    std::cerr << "kwire specs: no API named " << name << " (see 'kwire specs')\n";
    return 1;
  }
  for (Direction d : dirs) {
    auto versions = ps.versions(any->api_key, d);
    if (versions.empty()) continue;
    const MessageProgram* m = version < 0 ? versions.back() : ps.find(any->api_key, static_cast<int16_t>(version), d);
    if (!m) {
      std::cerr << "kwire specs: " << any->api_name << " has no version " << version << " (valid: "
                << versions.front()->version << "-" << versions.back()->version << ")\n";
      return 1;
    }
    write_layout(std::cout, ps, *m);
    if (d != dirs.back()) std::cout << "\n";
  }
  return 0;
}

}  // namespace kwire::cli
