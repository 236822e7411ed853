# VK_LAYER_vkprof's own test app (tests/layer/test_layer_basic.c): one process
# per case, the layer found through VK_ADD_LAYER_PATH=<build>/layer and
# enabled by name, the Khronos validation layer above ours (first listed) or
# below it; the summary JSON the layer writes is checked. And the layer .so
# exports only the loader interface's three entry points and the four
# introspection functions (case introspect calls those through dlopen).
if(TARGET VkLayer_vkprof)
  include(${PROJECT_SOURCE_DIR}/src/layer/names.cmake)
  # case spec's shader (a local size from a specialisation constant)
  set(VKPROF_LAYER_TEST_SHADERS)
  vkprof_add_shader(VKPROF_LAYER_TEST_SHADERS tests/layer/spec_args.comp)
  add_executable(test_layer_basic ${CMAKE_CURRENT_SOURCE_DIR}/test_layer_basic.c
                 ${VKPROF_LAYER_TEST_SHADERS})
  target_link_libraries(test_layer_basic PRIVATE vkprof_testlib vkprof_cjson vkprof_layer_names
                        ${CMAKE_DL_LIBS})
  target_include_directories(test_layer_basic PRIVATE ${VKPROF_TESTS_DIR})
  target_compile_options(test_layer_basic PRIVATE ${VKPROF_WARNINGS})
  add_dependencies(test_layer_basic VkLayer_vkprof)
  foreach(c above below off garbage sample label cmdbuf steplabel introspect spec)
    set(labels)
    if(c STREQUAL "introspect")
      set(labels unit) # dlopen and the introspection functions: no device
    endif()
    vkprof_test(NAME test_layer_basic_${c} LABELS ${labels}
      COMMAND test_layer_basic ${c} ${CMAKE_BINARY_DIR}/layer ${CMAKE_CURRENT_BINARY_DIR}/layer_basic)
  endforeach()
  vkprof_test(NAME test_layer_basic_exports LABELS unit
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIB=$<TARGET_FILE:VkLayer_vkprof>
            -P ${CMAKE_CURRENT_SOURCE_DIR}/test_layer_basic_exports.cmake)
endif()
