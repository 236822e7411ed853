# vkprof decode --profile all --trace writes a trace that vkprof report reads
# back: GPU phases and host spans on one timeline, with the token count.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${VKPROF} decode --preset tiny --tokens 4 --profile all
                        --trace ${WORK}/t.json --json ${WORK}/s.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "decode failed (${rc}):\n${out}\n${err}")
endif()
foreach(want "GPU time per phase" "Host spans over the whole run" "trace:     ${WORK}/t.json")
  string(FIND "${out}" "${want}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "decode output lacks '${want}':\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${VKPROF} report ${WORK}/t.json --svg ${WORK}/r.svg
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "report failed (${rc}):\n${out}\n${err}")
endif()
foreach(want "tokens        4" "mlp_gate_up" "layer" "calibrated_timestamps")
  string(FIND "${out}" "${want}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "report output lacks '${want}':\n${out}")
  endif()
endforeach()
if(NOT EXISTS ${WORK}/r.svg)
  message(FATAL_ERROR "no SVG written")
endif()
# --profile host alone: host spans, no GPU timing, one submit per token
execute_process(COMMAND ${VKPROF} decode --preset tiny --tokens 8 --profile host
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${err}" "vkprof host profile, steps 1-8" pos)
if(NOT rc EQUAL 0 OR pos EQUAL -1)
  message(FATAL_ERROR "--profile host: rc ${rc}, no per-token report:\n${out}\n${err}")
endif()
message(STATUS "${out}")
