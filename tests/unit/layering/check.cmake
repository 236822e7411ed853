# Nothing points back up (docs/design.md, "The pieces"): every #include "seam/..." of a file
# under src/ names its own seam or one below it. The order:
#   base < clock < timeline < gpu, host < export < core
# gpu and host are siblings: neither includes the other. src/context.h (the
# context's layout, types only) may be included by all and includes no seam.
# layer/ (the Vulkan layer, issue 9) is a front end above core: it includes
# its own headers, the public vkprof/vkprof.h and, like the tools, the two
# writers everyone shares (base/json.h, export/atomic_file.h); no other seam
# and not context.h (it calls the public API; symbols.cmake checks the calls).
#
# The tools (with -DTOOLS=<repo>/tools) see the library as the layer does:
# the public header and the shared internals that src/internal.cmake lists
# (the writers and the two trace formats), by their seam path through the
# target vkprof_internal. No tool reaches another folder by a relative path
# ("../"): a room links another room's target.
#
# Data follows the same order as includes (issue 27: "data crosses seams
# where calls don't"). Each block of the context (src/context.h) belongs to
# one seam: steps and errors to base, hclk and cal to clock, trace to
# timeline, gpu to gpu, host to host. A file may touch (`->block`) its own
# seam's blocks and those of seams below it, never one above or a sibling's:
# the timeline and the GPU core once read host's step counter, which now
# lives in base.
#   cmake -DSRC=<repo>/src [-DTOOLS=<repo>/tools] -P check.cmake
cmake_minimum_required(VERSION 3.16)
if(NOT DEFINED SRC)
  message(FATAL_ERROR "usage: cmake -DSRC=<repo>/src [-DTOOLS=<repo>/tools] -P check.cmake")
endif()
include(${SRC}/internal.cmake) # VKPROF_INTERNAL_HEADERS
set(rank_base 0)
set(rank_clock 1)
set(rank_timeline 2)
set(rank_gpu 3)
set(rank_host 3)
set(rank_export 4)
set(rank_core 5)
set(seams base clock timeline gpu host export core)

set(block_steps base)
set(block_errors base)
set(block_hclk clock)
set(block_cal clock)
set(block_trace timeline)
set(block_gpu gpu)
set(block_host host)

file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/*.c ${SRC}/*.h)
set(bad "")
set(checked 0)
set(fields 0)
foreach(f ${files})
  file(STRINGS ${SRC}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  string(REGEX MATCH "^[^/]+" own "${f}")
  if(own STREQUAL f)
    set(own "")  # a file at src/ itself (context.h)
  endif()
  if(own STREQUAL "layer")
    foreach(l ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${l}")
      math(EXPR checked "${checked} + 1")
      if(inc MATCHES "/" AND NOT inc STREQUAL "vkprof/vkprof.h" AND NOT inc IN_LIST VKPROF_INTERNAL_HEADERS)
        string(APPEND bad "  ${f}: includes \"${inc}\": the layer sees only the public vkprof/vkprof.h, the shared internals (src/internal.cmake) and its own headers\n")
      elseif(NOT inc MATCHES "/" AND NOT EXISTS ${SRC}/layer/${inc})
        string(APPEND bad "  ${f}: includes \"${inc}\", which is not a header of src/layer/\n")
      endif()
    endforeach()
    continue()
  endif()
  if(NOT own STREQUAL "" AND NOT own IN_LIST seams)
    string(APPEND bad "  ${f}: its folder '${own}' is not a known seam (add it to tests/unit/layering/check.cmake)\n")
    continue()
  endif()
  # the context's blocks this file touches
  if(NOT own STREQUAL "")
    file(STRINGS ${SRC}/${f} uses REGEX "->(steps|errors|hclk|cal|trace|gpu|host)([^A-Za-z0-9_]|$)")
    foreach(u ${uses})
      string(REGEX MATCHALL "->(steps|errors|hclk|cal|trace|gpu|host)([^A-Za-z0-9_]|$)" hits "${u}")
      foreach(h ${hits})
        string(REGEX REPLACE "^->([a-z]+).*" "\\1" blk "${h}")
        set(owner ${block_${blk}})
        math(EXPR fields "${fields} + 1")
        if(${rank_${owner}} GREATER ${rank_${own}})
          string(STRIP "${u}" us)
          string(APPEND bad "  ${f}: touches ctx->${blk}, ${owner}'s block, and ${owner} is above ${own}: ${us}\n")
        elseif(${rank_${owner}} EQUAL ${rank_${own}} AND NOT owner STREQUAL own)
          string(STRIP "${u}" us)
          string(APPEND bad "  ${f}: touches ctx->${blk}, ${owner}'s block, and ${owner} and ${own} are siblings: ${us}\n")
        endif()
      endforeach()
    endforeach()
  endif()
  foreach(l ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${l}")
    math(EXPR checked "${checked} + 1")
    # a path relative to the file's own folder ("json.h", "../base/json.h")
    if(NOT inc MATCHES "/" )
      if(EXISTS ${SRC}/${own}/${inc} AND NOT own STREQUAL "")
        continue()
      endif()
    endif()
    string(REGEX REPLACE "^\\.\\./" "" inc2 "${inc}")
    string(REGEX MATCH "^[^/]+" target "${inc2}")
    if(NOT inc2 MATCHES "/")
      set(target "")
    endif()
    if(target STREQUAL "" OR NOT target IN_LIST seams)
      continue()  # context.h, vkprof/vkprof.h: allowed everywhere
    endif()
    if(own STREQUAL "")
      string(APPEND bad "  ${f}: includes \"${inc}\": the context layout includes no seam\n")
      continue()
    endif()
    if(${rank_${target}} GREATER ${rank_${own}})
      string(APPEND bad "  ${f}: includes \"${inc}\": ${target} is above ${own}\n")
    elseif(${rank_${target}} EQUAL ${rank_${own}} AND NOT target STREQUAL own)
      string(APPEND bad "  ${f}: includes \"${inc}\": ${target} and ${own} are siblings\n")
    endif()
  endforeach()
endforeach()

# The tools: the public header, the shared internals, their own rooms' headers.
set(tool_includes 0)
if(DEFINED TOOLS)
  file(GLOB_RECURSE tfiles RELATIVE ${TOOLS} ${TOOLS}/*.c ${TOOLS}/*.h)
  foreach(f ${tfiles})
    file(STRINGS ${TOOLS}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(l ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${l}")
      math(EXPR tool_includes "${tool_includes} + 1")
      if(inc MATCHES "(^|/)\\.\\./")
        string(APPEND bad "  tools/${f}: includes \"${inc}\" by a relative path: link the room's or the library's target instead (tools/CMakeLists.txt)\n")
      elseif(inc MATCHES "/" AND EXISTS ${SRC}/${inc} AND NOT inc IN_LIST VKPROF_INTERNAL_HEADERS)
        string(APPEND bad "  tools/${f}: includes \"${inc}\", a library internal that src/internal.cmake does not share with the tools\n")
      endif()
    endforeach()
  endforeach()
  if(tool_includes LESS 20)
    message(FATAL_ERROR "layering: only ${tool_includes} includes found under ${TOOLS}: wrong folder?")
  endif()
endif()
if(NOT bad STREQUAL "")
  message(FATAL_ERROR "layering: a seam points back up:\n${bad}")
endif()
if(checked LESS 20)
  message(FATAL_ERROR "layering: only ${checked} includes found under ${SRC}: wrong folder?")
endif()
if(fields LESS 100)
  message(FATAL_ERROR "layering: only ${fields} uses of the context's blocks found under ${SRC}: wrong folder?")
endif()
message(STATUS "layering: ${checked} includes under src/ point down or sideways within their seam; ${fields} uses of the context's blocks touch their own seam's or one below; ${tool_includes} includes under tools/ see only the public header, the shared internals and the tools' own rooms")
