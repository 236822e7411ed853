# test_layer_app: tests/layer/layer_app under the vkprof layer (cmake -P).
#   -DAPP=<layer_app> -DLAYER_DIR=<dir of VkLayer_vkprof.json> -DWORK=<dir>
#   -DLAYERS=<VK_INSTANCE_LAYERS, e.g. VK_LAYER_KHRONOS_validation:VK_LAYER_vkprof>
#   -DMODE=dispatch|label  [-DITERATIONS=N]
# The app fails by itself on any validation message (its messenger sees the
# Khronos layer's messages wherever it sits in the chain). Then the layer's
# summary, per phase name, against what the app says it executed (re-submits
# counted): dispatch mode, dispatches per phase (the open command-buffer
# label, else the pipeline's debug-utils name); label mode, executions of each
# label region. Every count must be equal, or the difference be counted by
# the layer as lost (by reason), and only executions of the simultaneous-use
# buffer S may be short (executions pending at the same time share the stamps
# recorded in it); nothing may be left pending after the app's idle waits; no
# phase may appear that the app did not execute.
include(${CMAKE_CURRENT_LIST_DIR}/test_layer_app_common.cmake)
foreach(v APP LAYER_DIR WORK LAYERS MODE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "-D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED ITERATIONS)
  set(ITERATIONS 12)
endif()
if(NOT EXISTS ${LAYER_DIR}/VkLayer_vkprof.json)
  message(FATAL_ERROR "no layer manifest ${LAYER_DIR}/VkLayer_vkprof.json")
endif()

layer_exec(run LAYERS ${LAYERS} LAYER_DIR ${LAYER_DIR} OUT_DIR ${WORK}/out
           ENV VKPROF_LAYER_MODE=${MODE}
           COMMAND ${APP} --iterations ${ITERATIONS} --json ${WORK}/app.json)
if(NOT run_RC EQUAL 0)
  message(FATAL_ERROR "layer_app under ${LAYERS} (mode ${MODE}) failed (${run_RC}):\n"
                      "${run_OUT}\n${run_ERR}")
endif()
string(FIND "${run_ERR}" "VALIDATION" vpos)
if(NOT vpos EQUAL -1)
  message(FATAL_ERROR "validation messages under ${LAYERS}:\n${run_ERR}")
endif()
file(READ ${WORK}/app.json app_js)
if(MODE STREQUAL "label")
  json_object_counts(app "${app_js}" label_regions)
  json_object_counts(sim "${app_js}" label_regions_simultaneous)
else()
  json_object_counts(app "${app_js}" by_phase)
  json_object_counts(sim "${app_js}" by_phase_simultaneous)
endif()
# every layer named was there to enable (the loader skips a missing one with
# a notice only: validation would silently not run)
string(JSON navail LENGTH "${app_js}" layers_available)
set(avail)
math(EXPR last "${navail} - 1")
foreach(k RANGE ${last})
  string(JSON l GET "${app_js}" layers_available ${k})
  list(APPEND avail ${l})
endforeach()
string(REPLACE ":" ";" wanted "${LAYERS}")
foreach(l IN LISTS wanted)
  list(FIND avail ${l} i)
  if(i EQUAL -1)
    message(FATAL_ERROR "layer ${l} is not available to the loader (available: ${avail})")
  endif()
endforeach()
string(JSON second GET "${app_js}" second_queue)
string(JSON submit2 GET "${app_js}" queue_submit2)
read_summary(sum ${WORK}/out ${MODE})

set(app_total 0)
set(layer_total 0)
set(report "phase             app  layer\n")
set(fail "")
foreach(name IN LISTS app_NAMES)
  set(want ${app_COUNT_${name}})
  set(got 0)
  if(DEFINED sum_COUNT_${name})
    set(got ${sum_COUNT_${name}})
  endif()
  math(EXPR app_total "${app_total} + ${want}")
  math(EXPR layer_total "${layer_total} + ${got}")
  if(got GREATER want)
    string(APPEND fail "phase ${name}: the layer counts ${got}, the app executed ${want}\n")
  endif()
  # only executions of the simultaneous-use buffer may be short (overlapping
  # ones share its stamps); every other one was retired by a wait before the
  # buffer was submitted again, so the layer must time it
  set(sim 0)
  if(DEFINED sim_COUNT_${name})
    set(sim ${sim_COUNT_${name}})
  endif()
  math(EXPR exact "${want} - ${sim}")
  if(got LESS exact)
    string(APPEND fail "phase ${name}: the layer counts ${got}; at least ${exact} of the app's "
                       "${want} were never pending twice and must all be timed\n")
  endif()
  string(APPEND report "  ${name}: ${want} ${got} (simultaneous-use ${sim})\n")
endforeach()
foreach(name IN LISTS sum_NAMES)
  list(FIND app_NAMES ${name} i)
  if(i EQUAL -1)
    string(APPEND fail "phase ${name} (count ${sum_COUNT_${name}}) in the summary: the app "
                       "executed none\n")
  endif()
endforeach()
math(EXPR missing "${app_total} - ${layer_total}")
if(NOT missing EQUAL sum_LOST)
  string(APPEND fail "the layer counts ${layer_total} of ${app_total} scopes: ${missing} missing, "
                     "${sum_LOST} counted as lost\n")
endif()
if(NOT sum_PENDING EQUAL 0)
  string(APPEND fail "${sum_PENDING} scopes still pending after the app's idle waits\n")
endif()
if(NOT sum_TRACE STREQUAL "" AND NOT EXISTS ${WORK}/out/${sum_TRACE} AND NOT EXISTS ${sum_TRACE})
  string(APPEND fail "the summary names trace ${sum_TRACE}, which is not there\n")
endif()
if(fail)
  message(FATAL_ERROR "${LAYERS}, mode ${MODE}:\n${fail}${report}summary ${sum_FILE}\n"
                      "app: ${run_OUT}")
endif()
message(STATUS "${LAYERS}, mode ${MODE}, second queue: ${second}, vkQueueSubmit2: ${submit2}\n"
               "${report}total ${app_total}, layer ${layer_total}, lost ${sum_LOST}")
