# Issue 9: the layer's multi-threaded test app (tests/layer/layer_app.c, plain
# Vulkan, no vkprof call) and the tests that run it and `vkprof decode` under
# the vkprof layer. Included from tests/CMakeLists.txt.
add_executable(layer_app ${CMAKE_CURRENT_LIST_DIR}/layer_app.c)
target_link_libraries(layer_app PRIVATE vkprof_testlib Threads::Threads)
target_include_directories(layer_app PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(layer_app PRIVATE ${VKPROF_WARNINGS})

# By itself, validation-clean: the Khronos layer enabled by the app (its
# messenger fails the run on any message), then again with synchronization
# validation on (hazards between dispatches, copies, queues and submits).
add_test(NAME layer_app_plain COMMAND layer_app --validation)
add_test(NAME layer_app_plain_sync COMMAND layer_app --validation --iterations 8)
set_tests_properties(layer_app_plain PROPERTIES ENVIRONMENT "${VKPROF_TEST_ENV}" TIMEOUT 120)
set_tests_properties(layer_app_plain_sync PROPERTIES TIMEOUT 120 ENVIRONMENT
  "${VKPROF_TEST_ENV};VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT")

