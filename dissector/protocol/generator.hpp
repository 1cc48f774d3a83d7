// Seeded random messages that follow a program: every field present in the
// version, nulls where nullable, empty and longer arrays, unicode strings,
// tagged fields present and absent, unknown tagged fields and real record
// batches. Used by round-trip tests, benchmarks and fuzz seeds.
#pragma once

#include <cstdint>
#include <random>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire {

struct GeneratorOptions {
  uint32_t max_array = 4;        // elements per array (0..max)
  uint32_t max_string = 24;      // characters per string
  bool unknown_tags = true;      // sometimes add an unknown tagged field
  bool records = true;           // fill records fields with real batches
};

class MessageGenerator {
 public:
  MessageGenerator(const ProgramSet& ps, uint64_t seed, GeneratorOptions opts = {});
  // Fills `out` (header and body) with a random message of `m`.
  void generate(const MessageProgram& m, int32_t correlation_id, Frame& out);

 private:
  void structure(Frame& f, uint32_t sp, uint32_t node, int depth);
  void field(Frame& f, const FieldDesc& d, uint32_t di, uint32_t parent, bool element, int depth);
  std::string_view text(Frame& f);
  bool chance(int percent);

  const ProgramSet& ps_;
  std::mt19937_64 rng_;
  GeneratorOptions opts_;
};

}  // namespace kwire
