# The layering check must fail on what it is for (issue 27): a copy of src/
# with one planted access each, checked by check.cmake, which must fail and
# name the file and the block. The plants:
#   timeline/store.c reads ctx->host (host is above the timeline)
#   gpu/ring.c reads ctx->host (gpu and host are siblings)
#   clock/calib.c includes "gpu/gpu.h" (gpu is above clock)
# and, with TOOLS, on a copy of tools/:
#   report/trace_reader.c includes its format by a relative path into src/
#   cli/cmd_devices.c includes "gpu/gpu.h" (not a shared internal)
#   cmake -DSRC=<repo>/src [-DTOOLS=<repo>/tools] -DWORK=<scratch dir> -DCHECK=<check.cmake> -P planted.cmake
cmake_minimum_required(VERSION 3.16)
foreach(v SRC WORK CHECK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "usage: cmake -DSRC=... -DWORK=... -DCHECK=... -P planted.cmake")
  endif()
endforeach()
set(n 0)
# plant(src|tools FILE LINE WANT): FILE of a copy of that tree gets LINE;
# check.cmake must fail and say "FILE: WANT" (a tool's file as tools/FILE).
function(plant tree file line want)
  set(dir ${WORK}/planted-${tree}-${n})
  file(REMOVE_RECURSE ${dir})
  if(tree STREQUAL "src")
    file(COPY ${SRC}/ DESTINATION ${dir})
    set(args -DSRC=${dir})
    set(name ${file})
  else()
    file(COPY ${TOOLS}/ DESTINATION ${dir})
    set(args -DSRC=${SRC} -DTOOLS=${dir})
    set(name tools/${file})
  endif()
  file(APPEND ${dir}/${file} "\n${line}\n")
  execute_process(COMMAND ${CMAKE_COMMAND} ${args} -P ${CHECK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "planted: check.cmake passed with ${name} planted: ${line}")
  endif()
  string(FIND "${err}" "${name}: ${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "planted: check.cmake failed on ${name} but did not say \"${name}: ${want}\":\n${err}")
  endif()
  file(REMOVE_RECURSE ${dir})
  math(EXPR n "${n} + 1")
  set(n ${n} PARENT_SCOPE)
endfunction()
plant(src timeline/store.c
      "static uint32_t planted_(vkprof_context ctx) { return ctx->host.report_every\; }"
      "touches ctx->host, host's block, and host is above timeline")
plant(src gpu/ring.c
      "static uint32_t planted_(vkprof_context ctx) { return ctx->host.report_every\; }"
      "touches ctx->host, host's block, and host and gpu are siblings")
plant(src clock/calib.c "#include \"gpu/gpu.h\"" "includes \"gpu/gpu.h\": gpu is above clock")
if(DEFINED TOOLS)
  plant(tools report/trace_reader.c "#include \"../../src/export/trace_format.h\""
        "includes \"../../src/export/trace_format.h\" by a relative path")
  plant(tools cli/cmd_devices.c "#include \"gpu/gpu.h\""
        "includes \"gpu/gpu.h\", a library internal that src/internal.cmake does not share")
endif()
message(STATUS "planted: check.cmake caught all ${n} planted violations, naming each")
