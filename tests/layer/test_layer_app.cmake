# Issue 9: the layer's multi-threaded test app (tests/layer/layer_app.c, plain
# Vulkan, no vkprof call) and the tests that run it and `vkprof decode` under
# the vkprof layer. Included from tests/layer/CMakeLists.txt.
add_executable(layer_app ${CMAKE_CURRENT_LIST_DIR}/layer_app.c)
target_link_libraries(layer_app PRIVATE vkprof_testlib Threads::Threads)
target_include_directories(layer_app PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(layer_app PRIVATE ${VKPROF_WARNINGS})

# By itself, validation-clean: the Khronos layer enabled by the app (its
# messenger fails the run on any message), then again with synchronization
# validation on (hazards between dispatches, copies, queues and submits).
vkprof_test(NAME layer_app_plain COMMAND layer_app --validation TIMEOUT 120)
vkprof_test(NAME layer_app_plain_sync COMMAND layer_app --validation --iterations 8 TIMEOUT 120
            ENV VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT)

# Under the layer (<build>/layer/VkLayer_vkprof.json), once it is built here.
# VK_INSTANCE_LAYERS lists the closest to the app first: validation above ours
# checks the app's calls as the app made them, below ours it also checks every
# command the layer adds. test_layer_app*: the summary's per-phase counts
# against the app's own (tests/layer/test_layer_app_run.cmake);
# test_layer_decode: `vkprof decode --profile off` under the layer against the
# in-app ring (tests/layer/test_layer_decode_run.cmake).
if(TARGET VkLayer_vkprof OR TARGET vkprof_layer)
  set(LAYER_BUILD_DIR ${PROJECT_BINARY_DIR}/layer)
  set(LAYER_TEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/layer_runs)
  set(VAL VK_LAYER_KHRONOS_validation)
  foreach(t "test_layer_app|VK_LAYER_vkprof|dispatch"
            "test_layer_app_validation_above|${VAL}:VK_LAYER_vkprof|dispatch"
            "test_layer_app_validation_below|VK_LAYER_vkprof:${VAL}|dispatch"
            "test_layer_app_label|VK_LAYER_vkprof:${VAL}|label")
    string(REPLACE "|" ";" t "${t}")
    list(GET t 0 name)
    list(GET t 1 layers)
    list(GET t 2 mode)
    vkprof_test(NAME ${name} TIMEOUT 180
      COMMAND ${CMAKE_COMMAND} -DAPP=$<TARGET_FILE:layer_app> -DLAYER_DIR=${LAYER_BUILD_DIR}
              -DWORK=${LAYER_TEST_DIR}/${name} -DLAYERS=${layers} -DMODE=${mode}
              -P ${CMAKE_CURRENT_LIST_DIR}/test_layer_app_run.cmake)
  endforeach()
  if(TARGET vkprof_cli AND TARGET vkprof_decode)
    # alone (RUN_SERIAL): the share comparison is a timing one
    vkprof_test(NAME test_layer_decode TIMEOUT 400 PROPERTIES RUN_SERIAL TRUE
      COMMAND ${CMAKE_COMMAND} -DVKPROF=$<TARGET_FILE:vkprof_cli> -DLAYER_DIR=${LAYER_BUILD_DIR}
              -DWORK=${LAYER_TEST_DIR}/decode -P ${CMAKE_CURRENT_LIST_DIR}/test_layer_decode_run.cmake)
    # and with validation below ours: it checks every command the layer adds to
    # the decode's (the Khronos layer prints its messages to stdout here)
    vkprof_test(NAME test_layer_decode_validation TIMEOUT 400 PROPERTIES RUN_SERIAL TRUE
      COMMAND ${CMAKE_COMMAND} -DVKPROF=$<TARGET_FILE:vkprof_cli> -DLAYER_DIR=${LAYER_BUILD_DIR}
              -DWORK=${LAYER_TEST_DIR}/decode_validation -DLAYERS=VK_LAYER_vkprof:${VAL}
              -P ${CMAKE_CURRENT_LIST_DIR}/test_layer_decode_run.cmake)
  endif()
endif()
