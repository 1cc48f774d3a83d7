# Installing kwire like a Linux tool (`cmake --install`, `make install
# PREFIX=...`, the .deb of `make deb`): the command, its man pages and bash
# completion, and (dissector/wireshark/CMakeLists.txt) the Wireshark plugin
# and kwire.lua in the folders of the Wireshark they were built for.
include(GNUInstallDirs)

install(TARGETS kwire RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Man pages (kwire(1), kwire-decode(1), ...) and the bash completion, written
# at build time by the kwire just linked (`kwire --generate`) from the option
# tables that also parse its command line and print its --help (cli/), so they
# say what that binary does and cannot drift from it. The pages are installed
# as a directory: kwire knows its commands, CMake need not.
option(KWIRE_DOCS "Generate and install man pages and bash completion (kwire --generate)" ON)
if(KWIRE_DOCS AND CMAKE_CROSSCOMPILING)
  message(STATUS "kwire: no man pages or bash completion: a cross-compiled kwire cannot run here "
                 "to write them")
  set(KWIRE_DOCS OFF)
endif()
if(KWIRE_DOCS)
  set(KWIRE_MAN_DIR ${CMAKE_BINARY_DIR}/man)
  set(KWIRE_COMPLETION ${CMAKE_BINARY_DIR}/bash-completion/kwire)
  set(KWIRE_DOCS_STAMP ${CMAKE_BINARY_DIR}/man/.stamp)
  add_custom_command(
    OUTPUT ${KWIRE_DOCS_STAMP} ${KWIRE_COMPLETION}
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:kwire> --generate man ${KWIRE_MAN_DIR}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bash-completion
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:kwire> --generate complete-bash
            ${KWIRE_COMPLETION}
    COMMAND ${CMAKE_COMMAND} -E touch ${KWIRE_DOCS_STAMP}
    DEPENDS kwire
    COMMENT "Generating kwire's man pages and bash completion (kwire --generate)"
    VERBATIM)
  add_custom_target(kwire-docs ALL DEPENDS ${KWIRE_DOCS_STAMP} ${KWIRE_COMPLETION})

  # Gzipped, as Debian ships man pages (man reads both).
  install(DIRECTORY ${KWIRE_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          FILES_MATCHING PATTERN "*.1.gz")
  # Where bash-completion loads completions on demand (its completionsdir).
  install(FILES ${KWIRE_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
endif()

# Wireshark looks for plugins only in its own global folders and the user's
# personal ones: kwire.so and kwire.lua installed anywhere else (another
# prefix), say where they went, as the install's last words. The folders are
# dissector/wireshark/CMakeLists.txt's.
if(KWIRE_WIRESHARK)
  install(CODE "set(kwire_ws_plugin_dir [[${KWIRE_WIRESHARK_PLUGIN_DIR}]])
  set(kwire_ws_lua_dir [[${KWIRE_WS_INSTALL_LUA_DIR}]])
  set(kwire_ws_own_plugin_dir [[${KWIRE_WS_PKG_PLUGINDIR}]])
  set(kwire_ws_own_prefix [[${KWIRE_WS_PKG_PREFIX}]])")
  install(CODE [[
    foreach(d kwire_ws_plugin_dir kwire_ws_lua_dir)
      if(NOT IS_ABSOLUTE "${${d}}")
        set(${d} "${CMAKE_INSTALL_PREFIX}/${${d}}")
      endif()
    endforeach()
    get_filename_component(kwire_ws_own_lua_dir "${kwire_ws_own_plugin_dir}" DIRECTORY)
    get_filename_component(kwire_ws_version "${kwire_ws_own_plugin_dir}" NAME)
    set(kwire_ws_personal "$ENV{HOME}/.local/lib/wireshark/plugins")
    if(kwire_ws_plugin_dir STREQUAL "${kwire_ws_personal}/${kwire_ws_version}" AND "$ENV{DESTDIR}" STREQUAL "")
      message(NOTICE
        "kwire: the Wireshark plugin is in the personal plugin folder ${kwire_ws_plugin_dir}/epan of this "
        "user, whose tshark and Wireshark load it; run as root they ignore personal binary plugins "
        "(and use the personal kwire.lua instead).")
    elseif(NOT kwire_ws_plugin_dir STREQUAL kwire_ws_own_plugin_dir OR NOT kwire_ws_lua_dir STREQUAL kwire_ws_own_lua_dir)
      message(NOTICE
        "kwire: the Wireshark plugin is in $ENV{DESTDIR}${kwire_ws_plugin_dir}/epan/kwire.so and kwire.lua in "
        "$ENV{DESTDIR}${kwire_ws_lua_dir}/kwire.lua, but Wireshark only searches its own folders: "
        "${kwire_ws_own_plugin_dir}/epan and ${kwire_ws_own_lua_dir} (prefix ${kwire_ws_own_prefix}), "
        "and ~/.local/lib/wireshark/plugins/${kwire_ws_version}/epan and ~/.local/lib/wireshark/plugins "
        "for each user. Install with the prefix ${kwire_ws_own_prefix}, or configure with "
        "-DKWIRE_WIRESHARK_PLUGIN_DIR=${kwire_ws_own_plugin_dir} (kwire.lua follows it to the folder above).")
    endif()
  ]])
endif()

# ---- The Debian package (make deb) ------------------------------------------
# CPack's DEB generator on a Release tree: kwire_<version>_<arch>.deb, with
# Depends computed by dpkg-shlibdeps from what the binaries link, so they name
# the packages of the release the .deb is built on (libpcap0.8, libzstd1, ...,
# and for the plugin that release's libwiresharkNN, which pins the Wireshark
# ABI the plugin was built against).
set(KWIRE_DEB_MAINTAINER "kwire maintainers <maintainers@users.noreply.a-seed-e98cd1fc.example>"
    CACHE STRING "Maintainer field of the .deb (Name <email>)")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kwire)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${KWIRE_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KWIRE_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Apache Kafka wire-protocol dissector, recorder and replay tool")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "kwire reads Apache Kafka traffic off the wire and shows every request and\n"
  "response field by field. Its decoder is generated from Kafka's own message\n"
  "specs, so it knows every API and version of the Kafka release it was built\n"
  "from, including the streams-group RPCs.\n"
  "\n"
  "kwire decode, record, monitor, replay, streams, latency and specs work on\n"
  "captures and live traffic (monitor serves metrics to Prometheus). The\n"
  "package also installs a Wireshark plugin (kwire.so, for the Wireshark it\n"
  "was built against) and kwire.lua, which takes over in a Wireshark the\n"
  "plugin does not fit.")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "tshark | wireshark")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # kwire_<version>_<arch>.deb
find_program(DPKG_EXECUTABLE dpkg)
if(DPKG_EXECUTABLE)
  execute_process(COMMAND ${DPKG_EXECUTABLE} --print-architecture
                  OUTPUT_VARIABLE CPACK_DEBIAN_PACKAGE_ARCHITECTURE OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# No source tarballs (make package_source would pack the build trees too).
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
