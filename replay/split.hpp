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
#include "replay/routing.hpp"

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

// A coordinator's request that names several keys (DescribeGroups' groups,
// OffsetFetch v8+'s groups, DescribeTransactions' transactional ids, ...):
// each key and the element of the body's array that holds it (the string
// itself, or the struct whose key it is). Empty for a request of another role.
struct KeySlot {
  std::string key;
  uint32_t element = 0;
};
std::vector<KeySlot> key_slots(const Frame& request, const ProgramSet& ps, Role role);

// `request` with only the key elements `keep` (of key_slots()). Appends the
// message to `out`.
bool keep_keys(const Frame& request, const ProgramSet& ps, const std::vector<uint32_t>& keep, std::vector<uint8_t>& out,
               std::string& error);

// One answer from the answers to the parts of a request cut by key: the first
// answer's fields, and every answer's elements of the array of per-key
// results, in the order of the parts. Appends the message to `out`.
bool join_key_answers(const std::vector<const Frame*>& answers, const ProgramSet& ps, std::vector<uint8_t>& out,
                      std::string& error);

}  // namespace kwire::replay
