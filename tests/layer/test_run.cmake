# `vkprof run` (tools/run/cmd_run.c): exit status, signals, errors, the report
# from known summaries (tests/layer/test_run_*.json), and, where the layer is
# built (target VkLayer_vkprof), real runs under it.
if(NOT TARGET vkprof_cli)
  return()
endif()
set(RUN_CASES exit_status signal no_layer not_found no_vulkan report options)
if(TARGET VkLayer_vkprof)
  list(APPEND RUN_CASES layer_devices layer_decode)
  # node is not built with the sanitizer, so a sanitized layer cannot load into it
  if(NOT VKPROF_SANITIZE)
    list(APPEND RUN_CASES llama)
  endif()
endif()
find_package(Python3 COMPONENTS Interpreter QUIET)
find_program(VKPROF_RUN_NODE node)
foreach(case ${RUN_CASES})
  # the cases before the layer's own need no Vulkan device (label unit); the
  # llama one is a client's (labels client, llama)
  set(labels)
  if(case MATCHES "^(exit_status|signal|no_layer|not_found|no_vulkan|report|options)$")
    set(labels unit)
  elseif(case STREQUAL "llama")
    set(labels client llama)
  endif()
  vkprof_test(NAME test_run_${case} LABELS ${labels}
    PROPERTIES SKIP_REGULAR_EXPRESSION "node-llama-cpp is not installed \\(scripts/setup-llama.sh\\): skipped"
    COMMAND ${CMAKE_COMMAND} -DVKPROF=$<TARGET_FILE:vkprof_cli> -DCASE=${case}
      -DTMP=${CMAKE_CURRENT_BINARY_DIR}/run_${case}
      -DSRC=${CMAKE_CURRENT_SOURCE_DIR} -DLAYER=${CMAKE_BINARY_DIR}/layer
      -DPYTHON=${Python3_EXECUTABLE} -DNODE=${VKPROF_RUN_NODE}
      -P ${CMAKE_CURRENT_SOURCE_DIR}/test_run_cli.cmake)
endforeach()
