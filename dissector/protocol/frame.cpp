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

bool same_decoding(const Frame& a, const Frame& b, std::string* why) {
  auto differ = [&](std::string what) {
    if (why) *why = std::move(what);
    return false;
  };
  if (a.program != b.program || a.api_key != b.api_key || a.api_version != b.api_version ||
      a.direction != b.direction || a.correlation_id != b.correlation_id || a.header_version != b.header_version)
    return differ("read as different messages");
  if (a.canonical != b.canonical) return differ("canonical flag");
  if (a.body != b.body) return differ("body node " + std::to_string(a.body) + " against " + std::to_string(b.body));
  if (a.errors.size() != b.errors.size())
    return differ(std::to_string(a.errors.size()) + " errors against " + std::to_string(b.errors.size()));
  for (size_t i = 0; i < a.errors.size(); ++i)
    if (a.errors[i].offset != b.errors[i].offset || a.errors[i].reason != b.errors[i].reason)
      return differ("error " + std::to_string(i) + ": \"" + a.errors[i].reason + "\" at " +
                    std::to_string(a.errors[i].offset) + " against \"" + b.errors[i].reason + "\" at " +
                    std::to_string(b.errors[i].offset));
  if (a.nodes.size() != b.nodes.size())
    return differ(std::to_string(a.nodes.size()) + " nodes against " + std::to_string(b.nodes.size()));
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[i];
    if (x.desc != y.desc || x.offset != y.offset || x.length != y.length || x.end != y.end || x.parent != y.parent ||
        x.aux != y.aux || x.flags != y.flags || x.type != y.type || x.tag != y.tag)
      return differ("node " + std::to_string(i));
    if (x.v.u != y.v.u) {
      // Data in a decompressed buffer is each frame's own copy: same bytes, elsewhere.
      const size_t len = x.type == WireType::Uuid ? 16 : x.aux;
      if (!x.has_data() || !(x.flags & kInner) || !x.v.p || !y.v.p || std::memcmp(x.v.p, y.v.p, len) != 0)
        return differ("node " + std::to_string(i) + " value");
    }
  }
  return true;
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
