#include "tests/test_support.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kwire::test {

const Node* at(const Frame& f, const ProgramSet& ps, const std::string& path) {
  if (!f.body) return nullptr;
  uint32_t cur = f.body;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '.')) {
    int index = -1;
    if (auto lb = part.find('['); lb != std::string::npos) {
      index = std::stoi(part.substr(lb + 1));
      part = part.substr(0, lb);
    }
    const Node* n = find_field(f, ps, cur, part);
    if (!n) return nullptr;
    cur = static_cast<uint32_t>(n - f.nodes.data());
    if (index >= 0) {
      int k = 0;
      bool found = false;
      for (uint32_t c : Children(f, cur)) {
        if (k++ == index) { cur = c; found = true; break; }
      }
      if (!found) return nullptr;
    }
  }
  return &f.nodes[cur];
}

std::string shell_output(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

CommandResult kwire_cmd(const std::string& args) {
  auto err_path = std::filesystem::temp_directory_path() / ("kwire-err-" + std::to_string(::getpid()));
  std::string cmd = std::string(KWIRE_BINARY) + " " + args + " 2>" + err_path.string();
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  r.status = pclose(p);
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::filesystem::remove(err_path);
  return r;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i; (i = s.find('\n', start)) != std::string::npos; start = i + 1) out.push_back(s.substr(start, i - start));
  return out;
}

}  // namespace kwire::test
