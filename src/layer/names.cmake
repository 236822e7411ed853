# vkprof_layer_names: the layer's naming module (names.h: SPIR-V hash, default
# names, the name map), pure C, no Vulkan. Static and position independent, so
# that the layer (a shared object) links it in; `vkprof names` and the tests
# use it too. Included by src/layer/CMakeLists.txt, tools/CMakeLists.txt and
# tests/CMakeLists.txt, whichever comes first defines it.
if(TARGET vkprof_layer_names)
  return()
endif()
add_library(vkprof_layer_names STATIC ${CMAKE_CURRENT_LIST_DIR}/names.c)
target_include_directories(vkprof_layer_names PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_compile_options(vkprof_layer_names PRIVATE ${VKPROF_WARNINGS})
set_target_properties(vkprof_layer_names PROPERTIES
  POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
