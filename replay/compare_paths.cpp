#include "replay/compare_paths.hpp"

#include <fnmatch.h>

#include <cstdint>

namespace kwire::replay {

namespace {
bool glob(const std::vector<std::string>& segments, const std::vector<std::string_view>& path) {
  // Iterative glob over segments with a single backtrack point per **.
  size_t p = 0, s = 0, star_p = SIZE_MAX, star_s = 0;
  std::string seg;
  while (s < path.size()) {
    if (p < segments.size() && segments[p] == "**") { star_p = p++; star_s = s; continue; }
    if (p < segments.size()) {
      seg.assign(path[s]);
      if (fnmatch(segments[p].c_str(), seg.c_str(), 0) == 0) { ++p; ++s; continue; }
    }
    if (star_p == SIZE_MAX) return false;
    p = star_p + 1;
    s = ++star_s;
  }
  while (p < segments.size() && segments[p] == "**") ++p;
  return p == segments.size();
}
}  // namespace

bool PathPattern::matches(std::string_view api_name, const std::vector<std::string_view>& path) const {
  if (!api.empty() && api != api_name) return false;
  // A rule about a field covers everything under it.
  std::vector<std::string_view> prefix;
  for (const auto& seg : path) {
    prefix.push_back(seg);
    if (glob(segments, prefix)) return true;
  }
  return false;
}

bool PathPattern::matches_exactly(std::string_view api_name, const std::vector<std::string_view>& path) const {
  return (api.empty() || api == api_name) && glob(segments, path);
}

bool parse_pattern(const std::string& text, PathPattern& out, std::string& error) {
  out = PathPattern{};
  out.text = text;
  std::string path = text;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    out.api = text.substr(0, colon);
    path = text.substr(colon + 1);
  }
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    char c = i < path.size() ? path[i] : '.';
    if (c == '[') {  // indices do not take part in matching
      size_t close = path.find(']', i);
      if (close == std::string::npos) { error = "unclosed [ in path '" + text + "'"; return false; }
      i = close;
      continue;
    }
    if (c == '.') {
      if (cur.empty()) { error = "empty segment in path '" + text + "' at column " + std::to_string(i + 1); return false; }
      out.segments.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (out.segments.empty()) { error = "empty path"; return false; }
  return true;
}

// "body.responses[0].partitions[+1].errorCode" -> "body.responses.partitions.errorCode".
std::string plain_path(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') {
      size_t close = path.find(']', i);
      if (close == std::string::npos) break;
      i = close;
      continue;
    }
    out += path[i];
  }
  return out;
}

PathCursor::Step::Step(PathCursor& c, std::string seg, bool index) : c_(c), len_(c.text_.size()), index_(index) {
  if (!index && !c.text_.empty()) c.text_ += '.';
  c.text_ += seg;
  if (!index) c.segs_.push_back(std::move(seg));
}

PathCursor::Step::~Step() {
  c_.text_.resize(len_);
  if (!index_) c_.segs_.pop_back();
}

std::string field_name(const ProgramSet& ps, const Frame& f, uint32_t node) {
  const Node& n = f.nodes[node];
  if (n.desc == kDescUnknownTag) return "_tag" + std::to_string(n.tag);
  return std::string(ps.field(n.desc).json_name);
}

}  // namespace kwire::replay
