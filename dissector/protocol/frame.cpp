#include "dissector/protocol/frame.hpp"

#include <new>
#include <vector>

namespace kwire {

void Frame::clear() {
  program = nullptr;
  api_key = -1;
  api_version = -1;
  direction = Direction::Request;
  correlation_id = 0;
  header_version = 0;
  guessed = false;
  canonical = true;
  message = {};
  nodes.clear();
  body = 0;
  errors.clear();
  scratch_used_ = 0;
  owned_.clear();
}

void NodeTape::grow(size_t need) {
  size_t cap = cap_ ? cap_ * 2 : 256;
  while (cap < need) cap *= 2;
  void* p = std::realloc(static_cast<void*>(data_), cap * sizeof(Node));
  if (!p) throw std::bad_alloc();
  data_ = static_cast<Node*>(p);
  cap_ = cap;
}

ScratchBuffer& Frame::scratch() {
  if (scratch_used_ == scratch_.size()) scratch_.push_back(std::make_unique<ScratchBuffer>());
  auto& buf = *scratch_[scratch_used_++];
  buf.clear();
  return buf;
}

std::string_view Frame::own(std::string s) {
  owned_.push_back(std::make_unique<std::string>(std::move(s)));
  return *owned_.back();
}

std::string node_path(const Frame& f, const ProgramSet& ps, uint32_t node) {
  std::vector<std::string_view> parts;
  for (uint32_t i = node;;) {
    const Node& n = f.nodes[i];
    if (!(n.flags & kElement)) parts.push_back(ps.field(n.desc).name);
    if (n.parent == i) break;
    i = n.parent;
  }
  std::string out;
  // parts.back() is the root (header or body struct): not part of the path.
  for (size_t k = parts.size() - 1; k-- > 0;) {
    if (!out.empty()) out += '.';
    out += parts[k];
  }
  return out;
}

const Node* find_field(const Frame& f, const ProgramSet& ps, uint32_t from, std::string_view name) {
  if (from >= f.nodes.size()) return nullptr;
  for (uint32_t c : Children(f, from)) {
    if (ps.field(f.nodes[c].desc).name == name) return &f.nodes[c];
  }
  return nullptr;
}

}  // namespace kwire
