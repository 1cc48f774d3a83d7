// A decoded Kafka message: a flat tape of nodes, one per field, array element,
// record and record field. Nodes are appended in wire order; a container's
// `end` is the index one past its last descendant, so a subtree is a slice of
// the tape. Strings and bytes are views into the message bytes (or into a
// decompressed records buffer owned by the Frame), never copies. A Frame is
// reused from message to message, so steady-state decoding does not allocate.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
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
  // Whether v.p points at the value's bytes (strings, bytes, records, uuids).
  bool has_data() const {
    return type == WireType::String || type == WireType::Bytes || type == WireType::Records || type == WireType::Uuid ||
           type == WireType::VarBytes || type == WireType::VarString;
  }
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

// The node tape: a vector of Nodes whose append is inlined into the decoder
// and writes each node once (std::vector's emplace_back value-initializes the
// node, then the decoder overwrites it, and stays a call). Grows by doubling;
// clear() keeps the storage, so a Frame reused message to message stops
// allocating once it has seen its largest message.
class NodeTape {
 public:
  NodeTape() = default;
  NodeTape(const NodeTape& o) { *this = o; }
  NodeTape& operator=(const NodeTape& o) {
    if (this != &o) {
      size_ = 0;
      reserve(o.size_);
      if (o.size_) std::memcpy(static_cast<void*>(data_), o.data_, o.size_ * sizeof(Node));
      size_ = o.size_;
    }
    return *this;
  }
  NodeTape(NodeTape&& o) noexcept : data_(o.data_), size_(o.size_), cap_(o.cap_) { o.data_ = nullptr; o.size_ = o.cap_ = 0; }
  NodeTape& operator=(NodeTape&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
    return *this;
  }
  ~NodeTape() { std::free(data_); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Node* data() { return data_; }
  const Node* data() const { return data_; }
  Node& operator[](size_t i) { return data_[i]; }
  const Node& operator[](size_t i) const { return data_[i]; }
  Node* begin() { return data_; }
  Node* end() { return data_ + size_; }
  const Node* begin() const { return data_; }
  const Node* end() const { return data_ + size_; }
  Node& back() { return data_[size_ - 1]; }
  const Node& back() const { return data_[size_ - 1]; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  // New nodes are value-initialized (all zero), as std::vector's would be.
  void resize(size_t n) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) new (&data_[i]) Node();
    size_ = n;
  }
  Node& emplace_back() {
    Node* n = append();
    new (n) Node();
    return *n;
  }
  void push_back(const Node& n) { *append() = n; }
  // `n` unwritten nodes at the end; the caller sets every member of each.
  [[gnu::always_inline]] Node* append_n(size_t n) {
    if (cap_ - size_ < n) [[unlikely]] grow(size_ + n);
    Node* first = data_ + size_;
    size_ += n;
    return first;
  }
  // An unwritten node at the end; the caller sets every member.
  [[gnu::always_inline]] Node* append() { return append_n(1); }

 private:
  void grow(size_t need);

  Node* data_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
};
static_assert(std::is_trivially_copyable_v<Node>);

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
  NodeTape nodes;                // [0] header struct, then the body struct
  uint32_t body = 0;             // index of the body's root node (0 if none)
  std::vector<DecodeError> errors;   // empty when the message decoded cleanly

  bool ok() const { return errors.empty(); }
  void clear();

  static constexpr uint32_t kRoot = UINT32_MAX;  // parent of a root node
  // Builder used by the decoder, the records decoder and generators.
  // Inline: these run once per decoded field.
  [[gnu::always_inline]] uint32_t open(uint32_t desc, WireType type, uint32_t parent, uint32_t offset, uint8_t flags = 0) {
    const uint32_t idx = static_cast<uint32_t>(nodes.size());
    put_leaf(desc, type, parent == kRoot ? idx : parent, offset, 0, flags, 0);
    return idx;
  }
  // A node without children yet (a leaf, or a container open() starts),
  // `parent` already resolved, with its value, in one write.
  [[gnu::always_inline]] Node& put_leaf(uint32_t desc, WireType type, uint32_t parent, uint32_t offset, uint32_t length,
                                        uint8_t flags, uint64_t value, uint32_t aux = 0) {
    uint32_t idx = static_cast<uint32_t>(nodes.size());
    Node& n = *nodes.append();
    n.desc = desc;
    n.offset = offset;
    n.length = length;
    n.end = idx + 1;
    n.parent = parent;
    n.aux = aux;
    n.v.u = value;
    n.flags = flags;
    n.type = type;
    n.tag = 0;
    return n;
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

// Whether two decodings of the same message are the same: what it was read
// as, every node member for member, the errors and the canonical flag.
// Otherwise says where they first differ in `why`.
bool same_decoding(const Frame& a, const Frame& b, std::string* why = nullptr);

// The dotted spec path of a node: "Groups.Members.MemberEpoch".
std::string node_path(const Frame& f, const ProgramSet& ps, uint32_t node);
// A top-level or nested field by spec path from `from` (e.g. "ErrorCode").
const Node* find_field(const Frame& f, const ProgramSet& ps, uint32_t from, std::string_view name);

}  // namespace kwire
