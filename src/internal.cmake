# The shared internals (issue 27): the only library headers that code outside
# the library (the tools, the Vulkan layer) may include. Each is Vulkan-free
# and has one job that the library and its front ends share:
#   base/json.h              the one JSON writer (vkprof__json_*)
#   export/atomic_file.h     the one atomic file writer (vkprof__afile_*)
#   export/trace_format.h    the JSON trace's names and bounds, shared with
#                            its reader (tools/report)
#   export/pftrace_format.h  the native Perfetto trace's field numbers, shared
#                            with its reader
# They are reached through the target vkprof_internal, by their seam path
# ("base/json.h"), never by a relative path into src/. tests/unit/layering/
# check.cmake reads this list: a tool or layer file that includes any other
# library header, or reaches src/ through "../", fails the layering test.
# Included by the root CMakeLists (which makes the target) and by
# check.cmake in script mode (which reads only the list).
set(VKPROF_INTERNAL_HEADERS base/json.h export/atomic_file.h export/trace_format.h
    export/pftrace_format.h)
if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_library(vkprof_internal INTERFACE)
  target_include_directories(vkprof_internal INTERFACE ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(vkprof_internal INTERFACE vkprof)
endif()
