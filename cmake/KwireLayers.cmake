# Dependencies point one way: a folder includes only from its own folder and
# from the layers below it (docs/design.md, "Layers"). KWIRE_LAYERS in the
# top-level CMakeLists.txt lists the layers from the bottom up; folders that
# share a layer (written "streams replay") sit beside each other and include
# nothing of each other either.
#
# The check reads every `#include "folder/..."` line of the .cpp/.hpp/.h files
# under each folder of KWIRE_LAYERS and reports each include that points up
# or sideways, as
#
#   recorder/capture.cpp:19: layer violation: recorder/ includes "tls/keylog.hpp"
#   from tls/, a layer above it (bottom up: wire < recorder < tls < ...)
#
# and an include from a top-level folder that has no layer yet. It runs three
# ways, all with this one file:
#   - at configure time (include() of this file, then kwire_check_layers());
#   - at build time, the kwire-layers target of `all`, when a source changes;
#   - as the ctest test `layers`;
# the last two as a script:
#   cmake -DKWIRE_SOURCE_DIR=DIR "-DKWIRE_LAYERS=wire,recorder,...,streams replay,cli"
#         [-DKWIRE_STAMP=FILE] -P cmake/KwireLayers.cmake
# (layers separated by commas, the folders of one layer by spaces).

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  cmake_minimum_required(VERSION 3.22)  # the project's policies, for the functions below
endif()

# The files the check reads (absolute paths). With CONFIGURE_DEPENDS (for the
# build's DEPENDS) a file added later re-runs the configuration.
function(kwire_layer_sources source_dir layers out)
  set(files)
  set(flags)
  if("CONFIGURE_DEPENDS" IN_LIST ARGN)
    set(flags CONFIGURE_DEPENDS)
  endif()
  foreach(level IN LISTS layers)
    string(REPLACE " " ";" folders "${level}")
    foreach(folder IN LISTS folders)
      file(GLOB_RECURSE found ${flags} ${source_dir}/${folder}/*.cpp ${source_dir}/${folder}/*.hpp
           ${source_dir}/${folder}/*.h)
      list(APPEND files ${found})
    endforeach()
  endforeach()
  list(SORT files)
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# Sets `out` to the list of violation messages (empty when the layering holds).
function(kwire_check_layers source_dir layers out)
  # folder -> its level (0 = bottom), and the picture for the messages.
  set(problems)
  set(level_no 0)
  set(picture)
  set(known)
  foreach(level IN LISTS layers)
    string(REPLACE " " ";" folders "${level}")
    list(JOIN folders ", " names)
    list(APPEND picture "${names}")
    foreach(folder IN LISTS folders)
      if(folder IN_LIST known)
        list(APPEND problems "KWIRE_LAYERS names ${folder}/ twice")
      endif()
      list(APPEND known ${folder})
      set(level_of_${folder} ${level_no})
    endforeach()
    math(EXPR level_no "${level_no} + 1")
  endforeach()
  list(JOIN picture " < " picture)

  kwire_layer_sources("${source_dir}" "${layers}" files)
  foreach(file IN LISTS files)
    file(RELATIVE_PATH rel "${source_dir}" "${file}")
    string(REGEX MATCH "^[^/]+" from "${rel}")
    # Each include of a path with a folder, and its line number. (The file is
    # read whole and searched: as a CMake list of lines, a line holding ';' or
    # '[' would be split or joined and the numbers would drift.)
    file(READ "${file}" content)
    set(n 1)
    while(content MATCHES "(^|\n)[ \t]*#[ \t]*include[ \t]*\"(([^\"\n/]+)/[^\"\n]*)\"")
      set(hit "${CMAKE_MATCH_0}")
      set(path "${CMAKE_MATCH_2}")
      set(to "${CMAKE_MATCH_3}")
      string(FIND "${content}" "${hit}" at)
      string(SUBSTRING "${content}" 0 ${at} before)
      string(REGEX REPLACE "[^\n]+" "" newlines "${before}")
      string(LENGTH "${newlines}" skipped)
      math(EXPR n "${n} + ${skipped}")
      if(hit MATCHES "^\n")
        math(EXPR n "${n} + 1")
      endif()
      string(LENGTH "${hit}" length)
      math(EXPR at "${at} + ${length}")
      string(SUBSTRING "${content}" ${at} -1 content)
      if(to STREQUAL from)
        continue()
      endif()
      if(NOT DEFINED level_of_${to})
        # A folder of the tree that is not a layer yet (an include of a
        # generated file or of another project's folder is left alone).
        if(EXISTS "${source_dir}/${path}")
          list(APPEND problems "${rel}:${n}: layer violation: ${from}/ includes \"${path}\" from ${to}/, which has no place in KWIRE_LAYERS (CMakeLists.txt): add it there (bottom up: ${picture})")
        endif()
      elseif(level_of_${to} GREATER level_of_${from})
        list(APPEND problems "${rel}:${n}: layer violation: ${from}/ includes \"${path}\" from ${to}/, a layer above it (bottom up: ${picture})")
      elseif(level_of_${to} EQUAL level_of_${from})
        list(APPEND problems "${rel}:${n}: layer violation: ${from}/ includes \"${path}\" from ${to}/, a folder beside it in the same layer (bottom up: ${picture})")
      endif()
    endwhile()
  endforeach()
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

# The failure: every violation on a line of its own, as compilers print
# theirs (file:line:, unwrapped), then a fatal error that says what to do.
function(kwire_layers_report problems)
  list(LENGTH problems count)
  list(JOIN problems "\n" text)
  message(NOTICE "${text}")
  message(FATAL_ERROR "${count} include(s) against the layer order: a folder includes only from itself and from the "
          "layers below it in KWIRE_LAYERS (CMakeLists.txt; docs/design.md, \"Layers\"). Move the code to a layer "
          "both users can reach, or assemble the two in a layer above both (as pipeline/ does).")
endfunction()

# Script mode (cmake -P): the build's kwire-layers target and the ctest test.
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT KWIRE_SOURCE_DIR OR NOT KWIRE_LAYERS)
    message(FATAL_ERROR "usage: cmake -DKWIRE_SOURCE_DIR=DIR -DKWIRE_LAYERS=a,b,\"c d\",... [-DKWIRE_STAMP=FILE] -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  string(REPLACE "," ";" layers "${KWIRE_LAYERS}")
  kwire_check_layers("${KWIRE_SOURCE_DIR}" "${layers}" problems)
  if(problems)
    kwire_layers_report("${problems}")
  endif()
  if(KWIRE_STAMP)
    file(TOUCH "${KWIRE_STAMP}")
  endif()
endif()
