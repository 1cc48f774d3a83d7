// Paths of the comparison, the bottom part of it: how a field's place in an
// answer is written ("body.results[0].errorCode", the JSON names of
// `kwire decode -T json`), how rules name fields (PathPattern), and what is
// reported at a place (Difference). Every other compare_* part names fields
// through this one. Includes no other replay part.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire::replay {

// "[Api:]PATH": PATH is dot-separated JSON names without indices; a segment
// may hold * and ? wildcards, and ** stands for any number of segments.
struct PathPattern {
  std::string api;                    // empty: every api
  std::vector<std::string> segments;
  std::string text;                   // as written
  bool matches(std::string_view api_name, const std::vector<std::string_view>& path) const;
  // The field itself, not something under it.
  bool matches_exactly(std::string_view api_name, const std::vector<std::string_view>& path) const;
};
bool parse_pattern(const std::string& text, PathPattern& out, std::string& error);
// A difference's path without its indices: "body.responses[0].partitions[+1].errorCode"
// -> "body.responses.partitions.errorCode".
std::string plain_path(const std::string& path);

// What the comparison found at a path: two values that differ, and the rule
// that explains the difference, if one does.
struct Difference {
  std::string path;       // "body.results[0].errorCode"
  std::string recorded;   // JSON literal
  std::string replayed;   // JSON literal
  std::string rule;       // the ignore rule that covers it, or "expect" / empty
  bool ignored = false;
  // Error codes also by name ("NONE", "MESSAGE_TOO_LARGE"); empty otherwise.
  std::string recorded_name, replayed_name;
  std::string recorded_text() const { return recorded_name.empty() ? recorded : recorded + " " + recorded_name; }
  std::string replayed_text() const { return replayed_name.empty() ? replayed : replayed + " " + replayed_name; }
};

// A rule table of kwire's own, (pattern, why) pairs, as rules of type T (a
// struct with `pattern` and `why`). The patterns are literals known to parse.
template <class T>
std::vector<T> pattern_table(std::initializer_list<std::pair<const char*, const char*>> table) {
  std::vector<T> out;
  std::string error;
  for (const auto& [text, why] : table) {
    T rule{};
    parse_pattern(text, rule.pattern, error);
    rule.why = why;
    out.push_back(std::move(rule));
  }
  return out;
}

// Where a walk over an answer is: the path with its indices, as a Difference
// writes it, and the segments without them, as a PathPattern matches them.
class PathCursor {
 public:
  // One step down for as long as it lives: a field name, or an index ("[0]",
  // "[+1]") that is written into the path but is no segment.
  class Step {
   public:
    Step(PathCursor& c, std::string seg, bool index = false);
    ~Step();
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    PathCursor& c_;
    size_t len_;
    bool index_;
  };
  const std::string& text() const { return text_; }
  // The segments as a pattern reads them.
  std::vector<std::string_view> segments() const { return {segs_.begin(), segs_.end()}; }
  // The name of the field the cursor is at (empty at the top).
  std::string_view last() const { return segs_.empty() ? std::string_view() : std::string_view(segs_.back()); }

 private:
  std::string text_;
  std::vector<std::string> segs_;
};

// A child's name in a path: its JSON name, or "_tag<N>" for a tagged field
// the spec does not know.
std::string field_name(const ProgramSet& ps, const Frame& f, uint32_t node);

// Calls fn(node, path, segments) for every node under `node` of a frame, with
// its indexed path ("body.results[0].errorCode") and its plain segments.
template <class F>
void each_path(const ProgramSet& ps, const Frame& f, uint32_t node, std::string& path, std::vector<std::string>& segs,
               F&& fn) {
  for (uint32_t c : Children(f, node)) {
    const Node& n = f.nodes[c];
    size_t len = path.size();
    bool element = n.flags & kElement;
    if (element) {
      // index among siblings
      uint32_t idx = 0;
      for (uint32_t s : Children(f, node)) { if (s == c) break; ++idx; }
      path += "[" + std::to_string(idx) + "]";
    } else {
      std::string name = field_name(ps, f, c);
      path += "." + name;
      segs.push_back(name);
    }
    fn(c, path, segs);
    if (n.type == WireType::Struct || n.type == WireType::Array || n.type == WireType::Records)
      each_path(ps, f, c, path, segs, fn);
    path.resize(len);
    if (!element) segs.pop_back();
  }
}

}  // namespace kwire::replay
