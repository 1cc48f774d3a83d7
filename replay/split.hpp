// A request whose partitions have leaders on several brokers of the target is
// sent as one request per leader, each with that leader's partitions, and the
// answers are joined back into one answer, which is compared with the
// recorded one. Both work on decoded frames: the parts and the joined answer
// are encoded again from the specs (dissector/protocol/encoder.hpp), so they
// are messages a broker or a client could have sent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire::replay {

// The apis kwire splits: one array of topics, each with an array of
// partitions, in the request and in the answer. (Fetch is not among them: a
// fetch session lives on one broker.)
bool splittable(std::string_view api);

// `request` with only the partitions whose element nodes are in `keep`; a topic
// left with none is left out. Appends the message to `out`.
bool keep_partitions(const Frame& request, const ProgramSet& ps, const std::vector<uint32_t>& keep, std::vector<uint8_t>& out,
                     std::string& error);

// One answer from the answers to the parts, in the order of the parts: the
// first answer's fields, and every answer's topics, a topic's partitions from
// several answers under one element. Appends the message to `out`.
bool join_answers(const std::vector<const Frame*>& answers, const ProgramSet& ps, std::vector<uint8_t>& out,
                  std::string& error);

}  // namespace kwire::replay
