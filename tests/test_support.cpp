#include "tests/test_support.hpp"

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

}  // namespace kwire::test
