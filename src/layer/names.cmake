# vkprof_layer_names: the layer's naming module (names.h: SPIR-V hash, default
# names, the name map), pure C, no Vulkan. Static and position independent, so
# that the layer (a shared object) links it in; `vkprof names` and the tests
# use it too. Included by src/layer/CMakeLists.txt, tools/run/CMakeLists.txt and
# tests/CMakeLists.txt, whichever comes first defines it.
if(NOT TARGET vkprof_layer_names)
  add_library(vkprof_layer_names STATIC ${CMAKE_CURRENT_LIST_DIR}/names.c)
  target_include_directories(vkprof_layer_names PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_compile_options(vkprof_layer_names PRIVATE ${VKPROF_WARNINGS})
  set_target_properties(vkprof_layer_names PROPERTIES
    POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
endif()

# vkprof_layer_finish: finishing a process's profile (finish.c: its one
# trace and its summary, from the layer's index and its contexts or
# spools), in the layer and in `vkprof run` / `vkprof recover`. It calls the
# public API and the library's JSON and atomic-file writers.
if(NOT TARGET vkprof_layer_finish AND TARGET vkprof)
  add_library(vkprof_layer_finish STATIC ${CMAKE_CURRENT_LIST_DIR}/finish.c)
  target_include_directories(vkprof_layer_finish PUBLIC ${CMAKE_CURRENT_LIST_DIR}
                             PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(vkprof_layer_finish PUBLIC vkprof)
  target_compile_options(vkprof_layer_finish PRIVATE ${VKPROF_WARNINGS})
endif()
