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
function(plant file line want)
  set(dir ${WORK}/planted-${n})
  file(REMOVE_RECURSE ${dir})
  file(COPY ${SRC}/ DESTINATION ${dir})
  file(APPEND ${dir}/${file} "\n${line}\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -DSRC=${dir} -P ${CHECK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "planted: check.cmake passed with ${file} planted: ${line}")
  endif()
  string(FIND "${err}" "${file}: ${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "planted: check.cmake failed on ${file} but did not say \"${file}: ${want}\":\n${err}")
  endif()
  file(REMOVE_RECURSE ${dir})
  math(EXPR n "${n} + 1")
  set(n ${n} PARENT_SCOPE)
endfunction()
plant(timeline/store.c
      "static uint32_t planted_(vkprof_context ctx) { return ctx->host.report_every\; }"
      "touches ctx->host, host's block, and host is above timeline")
plant(gpu/ring.c
      "static uint32_t planted_(vkprof_context ctx) { return ctx->host.report_every\; }"
      "touches ctx->host, host's block, and host and gpu are siblings")
plant(clock/calib.c "#include \"gpu/gpu.h\"" "includes \"gpu/gpu.h\": gpu is above clock")
if(DEFINED TOOLS)
  function(plant_tool file line want)
    set(dir ${WORK}/planted-tools-${n})
    file(REMOVE_RECURSE ${dir})
    file(COPY ${TOOLS}/ DESTINATION ${dir})
    file(APPEND ${dir}/${file} "\n${line}\n")
    execute_process(COMMAND ${CMAKE_COMMAND} -DSRC=${SRC} -DTOOLS=${dir} -P ${CHECK}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(rc EQUAL 0)
      message(FATAL_ERROR "planted: check.cmake passed with tools/${file} planted: ${line}")
    endif()
    string(FIND "${err}" "tools/${file}: ${want}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "planted: check.cmake failed on tools/${file} but did not say \"tools/${file}: ${want}\":\n${err}")
    endif()
    file(REMOVE_RECURSE ${dir})
    math(EXPR n "${n} + 1")
    set(n ${n} PARENT_SCOPE)
  endfunction()
  plant_tool(report/trace_reader.c "#include \"../../src/export/trace_format.h\""
             "includes \"../../src/export/trace_format.h\" by a relative path")
  plant_tool(cli/cmd_devices.c "#include \"gpu/gpu.h\""
             "includes \"gpu/gpu.h\", a library internal that src/internal.cmake does not share")
endif()
message(STATUS "planted: check.cmake caught all ${n} planted violations, naming each")
