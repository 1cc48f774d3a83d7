// A decoded Kafka message: a flat tape of nodes, one per field, array element,
// record and record field. Nodes are appended in wire order; a container's
// `end` is the index one past its last descendant, so a subtree is a slice of
// the tape. Strings and bytes are views into the message bytes (or into a
// decompressed records buffer owned by the Frame), never copies. A Frame is
// reused from message to message, so steady-state decoding does not allocate.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/program.hpp"

namespace kwire {

// Node::flags
enum NodeFlag : uint8_t {
  kNull = 1 << 0,      // a null string, bytes, array or struct
  kElement = 1 << 1,   // an array element (desc is the array's; records use kDescRecord/kDescHeader)
  kInner = 1 << 2,     // offset is into a decompressed buffer, not the message
  kOverlay = 1 << 3,
  // A bytes field that carries a serialized Kafka structure (see decoder.hpp):
  // its children are the decoded payload. The bytes stay the field's value
  // (v.p, aux) and are what the encoder writes.
  kNested = 1 << 4,
  kNestedFailed = 1 << 5,   // ... whose decoding failed (Frame::errors says where and why)
  kNestedMessage = 1 << 6,  // ... and the payload is a whole message: a header node, then a body node
};

// Node::aux of a nullable struct decoded from the wire: kMarkerRecorded | the
// marker byte, so that re-encoding writes the byte that came.
constexpr uint32_t kMarkerRecorded = 0x100;

struct Node {
  uint32_t desc = 0;     // FieldDesc index in the ProgramSet
  uint32_t offset = 0;   // wire offset from the start of the message (size prefix included)
  uint32_t length = 0;   // wire length, length prefixes included
  uint32_t end = 0;      // one past the last node of this subtree
  uint32_t parent = 0;   // enclosing node (itself for a root)
  uint32_t aux = 0;      // arrays: element count; strings/bytes: data length; bool, nullable struct: raw byte
  union {
    int64_t i;
    uint64_t u;
    double f;
    const uint8_t* p;    // strings, bytes, records, uuid: the data
  } v{0};
  uint8_t flags = 0;
  WireType type = WireType::Int8;  // element type for elements, else the field's type
  uint32_t tag = 0;      // tagged fields: the tag (unknown ones have no descriptor to hold it)

  bool is_null() const { return flags & kNull; }
  std::string_view str() const { return {reinterpret_cast<const char*>(v.p), aux}; }
  std::span<const uint8_t> bytes() const { return {v.p, aux}; }
};

// A byte buffer that a decompressor fills before anything reads it: growing
// it leaves the new bytes uninitialized instead of zeroing them first.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};
using ScratchBuffer = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

struct DecodeError {
  uint32_t offset = 0;   // from the start of the message
  std::string reason;
};

class Frame {
 public:
  // What the message is.
  const MessageProgram* program = nullptr;   // null when the api/version is unknown
  int16_t api_key = -1;
  int16_t api_version = -1;
  Direction direction = Direction::Request;
  int32_t correlation_id = 0;
  int header_version = 0;
  bool guessed = false;          // response version guessed (decode --guess)
  bool canonical = true;         // false: non-minimal varints, which re-encode in minimal form
  std::span<const uint8_t> message;  // the bytes, size prefix included
  std::vector<Node> nodes;       // [0] header struct, then the body struct
  uint32_t body = 0;             // index of the body's root node (0 if none)
  std::vector<DecodeError> errors;   // empty when the message decoded cleanly

  bool ok() const { return errors.empty(); }
  void clear();

  static constexpr uint32_t kRoot = UINT32_MAX;  // parent of a root node
  // Builder used by the decoder, the records decoder and generators.
  // Inline: these run once per decoded field.
  [[gnu::always_inline]] uint32_t open(uint32_t desc, WireType type, uint32_t parent, uint32_t offset, uint8_t flags = 0) {
    uint32_t idx = static_cast<uint32_t>(nodes.size());
    Node& n = nodes.emplace_back();
    n.desc = desc;
    n.type = type;
    n.parent = parent == kRoot ? idx : parent;
    n.offset = offset;
    n.flags = flags;
    n.end = idx + 1;
    return idx;
  }
  void close(uint32_t node, uint32_t end_offset) {
    Node& n = nodes[node];
    n.end = static_cast<uint32_t>(nodes.size());
    n.length = end_offset - n.offset;
  }
  [[gnu::always_inline]] uint32_t leaf(uint32_t desc, WireType type, uint32_t parent, uint32_t offset, uint32_t length, uint8_t flags = 0) {
    uint32_t idx = open(desc, type, parent, offset, flags);
    nodes[idx].length = length;
    return idx;
  }

  // Buffers that outlive the message bytes for this frame: decompressed
  // records and strings made by generators. Reused across clear().
  ScratchBuffer& scratch();
  std::string_view own(std::string s);

  void fail(uint32_t offset, std::string reason) { errors.push_back({offset, std::move(reason)}); }

 private:
  std::vector<std::unique_ptr<ScratchBuffer>> scratch_;
  size_t scratch_used_ = 0;
  std::vector<std::unique_ptr<std::string>> owned_;
};

// Children of a container node, in order (skips grandchildren).
class Children {
 public:
  Children(const Frame& f, uint32_t node) : f_(f), first_(node + 1), end_(f.nodes[node].end) {}
  struct It {
    const Frame* f; uint32_t i;
    uint32_t operator*() const { return i; }
    It& operator++() { i = f->nodes[i].end; return *this; }
    bool operator!=(const It& o) const { return i != o.i; }
  };
  It begin() const { return {&f_, first_}; }
  It end() const { return {&f_, end_}; }
 private:
  const Frame& f_;
  uint32_t first_, end_;
};

// The dotted spec path of a node: "Groups.Members.MemberEpoch".
std::string node_path(const Frame& f, const ProgramSet& ps, uint32_t node);
// A top-level or nested field by spec path from `from` (e.g. "ErrorCode").
const Node* find_field(const Frame& f, const ProgramSet& ps, uint32_t from, std::string_view name);

}  // namespace kwire
