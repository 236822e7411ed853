# Issue 24: apps LINKED TO THE LOADER (cc app.c -lvulkan, as most apps and
# llama.cpp's own executables are), in C and in C++ (tests/layer/linked_app.c),
# under the vkprof layer: first, last or between other layers, with the
# Khronos validation layer above and below, and off; signal deaths, fork,
# exec, a server stopped with SIGINT, two runs in one folder
# (tests/layer/test_layer_linked_run.cmake). Included from tests/layer/CMakeLists.txt.
if(NOT TARGET VkLayer_vkprof OR NOT TARGET vkprof_cli)
  return()
endif()
add_executable(linked_app ${CMAKE_CURRENT_LIST_DIR}/linked_app.c)
find_package(Threads REQUIRED)
target_link_libraries(linked_app PRIVATE Vulkan::Vulkan ${CMAKE_DL_LIBS} Threads::Threads)
target_include_directories(linked_app PRIVATE ${VKPROF_SHADER_DIR})
target_compile_options(linked_app PRIVATE ${VKPROF_WARNINGS})
add_dependencies(linked_app vkprof_shaders)
set(LINKED_APPS linked_app)
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  # the same source as C++ (a C++ app: its own name mangling, libstdc++, the
  # loader's prototypes through the C++ view of vulkan.h)
  set(_cxx_src ${CMAKE_CURRENT_BINARY_DIR}/linked_app_cxx.cpp)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/linked_app.c ${_cxx_src} COPYONLY)
  add_executable(linked_app_cxx ${_cxx_src})
  target_link_libraries(linked_app_cxx PRIVATE Vulkan::Vulkan ${CMAKE_DL_LIBS} Threads::Threads)
  target_include_directories(linked_app_cxx PRIVATE ${VKPROF_SHADER_DIR})
  target_compile_options(linked_app_cxx PRIVATE -Wall -Wextra $<$<BOOL:${VKPROF_WERROR}>:-Werror>)
  add_dependencies(linked_app_cxx vkprof_shaders)
  list(APPEND LINKED_APPS linked_app_cxx)
else()
  message(WARNING "no C++ compiler: the C++ app linked to the loader is not tested")
endif()

find_package(Python3 COMPONENTS Interpreter QUIET)
set(LINKED_CASES orders off)
# the bad days, on the C app (the C++ one is the same code)
set(LINKED_C_CASES deaths server fork_exec folder accounting names rotate inflight)
foreach(app ${LINKED_APPS})
  set(cases ${LINKED_CASES})
  if(app STREQUAL "linked_app")
    list(APPEND cases ${LINKED_C_CASES})
  endif()
  foreach(case ${cases})
    # a hang is a failure, never a stuck suite (each run inside has its own limit)
    vkprof_test(NAME test_layer_linked_${case}_${app}
      COMMAND ${CMAKE_COMMAND} -DVKPROF=$<TARGET_FILE:vkprof_cli> -DAPP=$<TARGET_FILE:${app}>
              -DLAYER_DIR=${PROJECT_BINARY_DIR}/layer -DCASE=${case}
              -DFIXTURE=$<TARGET_FILE:names_fixture> -DSTRIP=${CMAKE_STRIP}
              -DPYTHON=${Python3_EXECUTABLE}
              -DWORK=${CMAKE_CURRENT_BINARY_DIR}/layer_linked/${app}_${case}
              -P ${CMAKE_CURRENT_LIST_DIR}/test_layer_linked_run.cmake)
    if(case STREQUAL "rotate")
      # it compares two runs' splits, lavapipe timed on the same 2 cores as
      # the tests beside it: a run under another test's load drifts past
      # the 15 pp it allows (seen with the inflight case at ctest -j2)
      set_tests_properties(test_layer_linked_${case}_${app} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endforeach()
