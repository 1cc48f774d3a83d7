// What differs between the Wireshark releases the plugin builds against
// (4.0, 4.2, 4.4, 4.6), in one place, chosen by the release's ws_version.h.
// plugin.cpp uses these names and never tests a version itself.
//
// A plugin binary loads only into the major.minor it was built for
// (plugin_want_major/minor, and libwireshark's soname changes with it), so
// each release builds its own kwire.so from the same sources.
//
//   4.0   gboolean preferences and heuristic results, tvb_get_guint8.
//   4.2   adds plugin_describe() (the plugin's kind, for `tshark -G plugins`
//         and About > Plugins).
//   4.4   epan converted to C99 types: bool preferences (a gboolean, an int,
//         no longer fits the bool* the API takes), heuristic dissectors
//         return bool, and tvb_get_guint8 is a deprecated alias of
//         tvb_get_uint8.
//   4.6   as 4.4 for everything the plugin uses.
//
// Each choice below is checked against the installed headers' declaration
// (static_assert), so a release whose API moved at another version than the
// one named here fails to build with a message saying which check to fix,
// instead of converting a pointer behind our back.
#pragma once

#include <cstdint>
#include <tuple>
#include <type_traits>

#include <epan/packet.h>
#include <epan/prefs.h>
#include <epan/tvbuff.h>
#include <ws_version.h>

#if WIRESHARK_VERSION_MAJOR > 4 || (WIRESHARK_VERSION_MAJOR == 4 && WIRESHARK_VERSION_MINOR >= 2)
#include <wsutil/plugins.h>
#endif

// Wireshark major.minor at least (major, minor).
#define KWIRE_WS_AT_LEAST(major, minor) \
  (WIRESHARK_VERSION_MAJOR > (major) || (WIRESHARK_VERSION_MAJOR == (major) && WIRESHARK_VERSION_MINOR >= (minor)))

// 4.2 looks up plugin_describe() beside plugin_register(); 4.0 has no such
// symbol and no WS_PLUGIN_DESC_ flags.
#define KWIRE_WS_HAS_PLUGIN_DESCRIBE KWIRE_WS_AT_LEAST(4, 2)

namespace kwire::wireshark::ws {

#if KWIRE_WS_AT_LEAST(4, 4)
using pref_bool = bool;       // prefs_register_bool_preference(..., bool*)
using heur_result = bool;     // heur_dissector_t returns bool
#else
using pref_bool = gboolean;
using heur_result = gboolean;
#endif

inline uint8_t get_uint8(tvbuff_t* tvb, int offset) {
#if KWIRE_WS_AT_LEAST(4, 4)
  return tvb_get_uint8(tvb, offset);
#else
  return tvb_get_guint8(tvb, offset);
#endif
}

namespace detail {
template <typename F> struct last_param;
template <typename R, typename... A> struct last_param<R (*)(A...)> {
  using type = std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>;
};
template <typename F> struct result_of;
template <typename R, typename... A> struct result_of<R (*)(A...)> { using type = R; };
}  // namespace detail

static_assert(std::is_same_v<detail::last_param<decltype(&prefs_register_bool_preference)>::type, pref_bool*>,
              "ws_compat.hpp: this Wireshark's prefs_register_bool_preference takes another type than "
              "ws::pref_bool: move the version check of pref_bool");
static_assert(std::is_same_v<detail::result_of<heur_dissector_t>::type, heur_result>,
              "ws_compat.hpp: this Wireshark's heur_dissector_t returns another type than ws::heur_result: "
              "move the version check of heur_result");

}  // namespace kwire::wireshark::ws
