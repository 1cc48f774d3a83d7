// Views of the streams-group model: a text report, JSON, the topology as a
// Graphviz graph (DOT) and a self-contained HTML page (timeline + graph).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "streams/streams_model.hpp"

namespace kwire::streams {

std::string text_report(const Summary& s);
nlohmann::json json_report(const Summary& s);

// The topology the way Topology#describe() prints it ("Sub-topology: 0",
// "Source: X (topics: [t])", "--> successor", "<-- predecessor").
std::string describe_text(const Topology& t);
// The topology of one group as a DOT digraph: one cluster per sub-topology
// and global store, one node per processor node (topics and stores in its
// label), one edge per successor. Falls back to sub-topologies with their
// topics when only the heartbeat's topology is known.
std::string topology_dot(const Group& g);
// All groups' graphs in one digraph (clusters prefixed with the group).
std::string topology_dot(const Summary& s);

// Renders DOT to SVG with Graphviz `dot`; false with the reason when it cannot.
bool render_svg(const std::string& dot, std::string& svg, std::string& error);

// The page: inline CSS, JS and SVG only. `title` names the capture.
std::string html_report(const Summary& s, const std::string& title);

}  // namespace kwire::streams
