# `vkprof names` on llama.cpp's real libggml-vulkan.so (node-llama-cpp, which
# tests/clients installs); skipped when it is not installed.
#   cmake -DVKPROF= -DTEST_NAMES= -DCLIENTS=<tests/clients> -DTMP= [-DPYTHON= -DPATCHER=]
#         -P test_names_ggml.cmake
file(GLOB_RECURSE libs ${CLIENTS}/*/libggml-vulkan.so)
if(libs STREQUAL "")
  message("libggml-vulkan.so is not installed under ${CLIENTS}: skipped")
  return()  # SKIP_REGULAR_EXPRESSION of the test
endif()
list(GET libs 0 lib)
file(MAKE_DIRECTORY ${TMP})
execute_process(COMMAND ${VKPROF} names -o ${TMP}/ggml.map ${lib}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
message(STATUS "vkprof names ${lib}: exit ${rc}: ${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vkprof names failed on ${lib}")
endif()
string(REGEX MATCH ": ([0-9]+) SPIR-V modules" _ "${err}")
set(n ${CMAKE_MATCH_1})
if(n STREQUAL "" OR n LESS 500)
  message(FATAL_ERROR "only '${n}' modules found in ${lib}")
endif()
# ggml's own shader names, without the _data suffix; the _len integers and
# the pointer tables (arr_dmmv_*_data) are not modules
file(STRINGS ${TMP}/ggml.map rows REGEX "^[0-9a-f]+ ")
list(LENGTH rows nrows)
if(NOT nrows EQUAL n)
  message(FATAL_ERROR "${nrows} map lines for ${n} modules")
endif()
file(READ ${TMP}/ggml.map map)
foreach(name rms_norm_f32 soft_max_f32 add_f32_f32_f32)
  if(NOT map MATCHES "\n[0-9a-f]+ ${name}\n")
    message(FATAL_ERROR "the map has no ${name}")
  endif()
endforeach()
if(map MATCHES "_len\n|_data\n|arr_dmmv")
  message(FATAL_ERROR "the map names a length, a suffix or a pointer table")
endif()
execute_process(COMMAND ${TEST_NAMES} --map ${TMP}/ggml.map ${n} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the map does not load")
endif()

# ggml's run-time float-controls patch (test_names_ggml_patch.py does what
# ggml_vk_create_pipeline_func does) on every 10th real module: the patched
# modules hash as the shipped ones, so a name map built from the .so names
# what the layer sees
if(PYTHON AND PATCHER)
  file(REMOVE_RECURSE ${TMP}/patch)
  execute_process(COMMAND ${PYTHON} ${PATCHER} ${lib} ${TMP}/patch 10 RESULT_VARIABLE rc
                  OUTPUT_VARIABLE said)
  message(STATUS "${said}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the patcher failed")
  endif()
  file(GLOB orig ${TMP}/patch/orig/*.spv)
  file(GLOB patched ${TMP}/patch/patched/*.spv)
  list(LENGTH orig n_orig)
  if(n_orig LESS 50)
    message(FATAL_ERROR "only ${n_orig} modules to patch")
  endif()
  foreach(d orig patched)
    execute_process(COMMAND ${VKPROF} names -o ${TMP}/patch/${d}.map ${${d}} RESULT_VARIABLE rc
                    ERROR_QUIET)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "vkprof names failed on the ${d} modules")
    endif()
  endforeach()
  file(READ ${TMP}/patch/orig.map a)
  file(READ ${TMP}/patch/patched.map b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "patched modules hash unlike the shipped ones")
  endif()
  # and the patch really changed the bytes
  list(GET orig 0 o0)
  list(GET patched 0 p0)
  file(SHA256 ${o0} h0)
  file(SHA256 ${p0} h1)
  if(h0 STREQUAL h1)
    message(FATAL_ERROR "the patch left ${o0} as it was")
  endif()
endif()
