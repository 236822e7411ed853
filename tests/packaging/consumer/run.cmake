cmake_minimum_required(VERSION 3.25)
# Install the build into a scratch prefix (plain layout: lib/, include/), then
# build and run a separate consumer project against it: with find_package
# (vkprof::vkprof, vkprof::vkprof_shared, vkprof::vkprof_static) and with
# pkg-config (libvkprof.so, and the archive with --static). The flags of
# vkprof.pc must name folders that exist. The Debian layout (/usr, multiarch
# libdir, DESTDIR) is tests/packaging/install_layouts.cmake.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(LAST_OUT "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(target vkprof vkprof_shared vkprof_static)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/packaging/consumer -B ${WORK_DIR}/build_${target}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
      -DVKPROF_CONSUMER_TARGET=vkprof::${target})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/build_${target})
  run(${WORK_DIR}/build_${target}/consumer)
  message(STATUS "find_package, vkprof::${target}: ${LAST_OUT}")
endforeach()
# vkprof::vkprof is the shared library exactly when the build had
# BUILD_SHARED_LIBS=ON.
file(STRINGS ${BUILD_DIR}/CMakeCache.txt shared_line REGEX "^BUILD_SHARED_LIBS:")
string(REGEX REPLACE "^[^=]*=" "" shared "${shared_line}")
find_program(READELF readelf)
if(READELF)
  run(${READELF} -d ${WORK_DIR}/build_vkprof/consumer)
  if(LAST_OUT MATCHES "\\[libvkprof\\.so")
    set(linked_shared ON)
  else()
    set(linked_shared OFF)
  endif()
  if((shared AND NOT linked_shared) OR (NOT shared AND linked_shared))
    message(FATAL_ERROR "BUILD_SHARED_LIBS='${shared}' but vkprof::vkprof linked the "
                        "shared library: ${linked_shared}")
  endif()
  message(STATUS "vkprof::vkprof is the shared library: ${linked_shared}")
endif()

# `vkprof bench --layer` from the installed prefix (issue 26): the layer is
# found in <prefix>/share/vulkan/explicit_layer.d, with no build tree beside
# the tool; a prefix with the tool alone is refused, naming both places.
set(installed_manifest ${prefix}/share/vulkan/explicit_layer.d/VkLayer_vkprof.json)
if(EXISTS ${prefix}/bin/vkprof AND EXISTS ${installed_manifest})
  unset(ENV{VKPROF_LAYER_DIR})
  execute_process(COMMAND ${prefix}/bin/vkprof bench --layer --preset tiny --tokens 2 --repeats 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  string(FIND "${out}" "the layer in ${prefix}/bin/../share/vulkan/explicit_layer.d\n" at)
  string(FIND "${out}" "tokens identical across all runs: yes" same)
  if(NOT rc EQUAL 0 OR at LESS 0 OR same LESS 0)
    message(FATAL_ERROR "bench --layer from the installed prefix (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "bench --layer from the installed prefix: the layer in its share/vulkan")
  file(MAKE_DIRECTORY ${WORK_DIR}/bare/bin)
  file(COPY ${prefix}/bin/vkprof DESTINATION ${WORK_DIR}/bare/bin)
  execute_process(COMMAND ${WORK_DIR}/bare/bin/vkprof bench --layer --repeats 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  string(FIND "${err}" "no layer manifest (VkLayer_vkprof.json) in ${WORK_DIR}/bare/bin/layer or ${WORK_DIR}/bare/bin/../share/vulkan/explicit_layer.d" said)
  if(NOT rc EQUAL 2 OR said LESS 0)
    message(FATAL_ERROR "bench --layer with no layer installed (${rc}): ${err}")
  endif()
else()
  message(STATUS "no vkprof tool or layer installed: bench --layer from a prefix not checked")
endif()

find_program(PKG_CONFIG pkg-config)
if(NOT PKG_CONFIG)
  # Only where pkg-config is not installed at all (the GPU machine); CI has it.
  message(WARNING "pkg-config not installed: the vkprof.pc half of this test is skipped")
  return()
endif()
file(GLOB pcdir ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "${pcdir}")
run(${PKG_CONFIG} --cflags vkprof)
string(STRIP "${LAST_OUT}" cflags)
run(${PKG_CONFIG} --libs vkprof)
string(STRIP "${LAST_OUT}" libs)
run(${PKG_CONFIG} --libs --static vkprof)
string(STRIP "${LAST_OUT}" static_libs)
separate_arguments(cflags UNIX_COMMAND "${cflags}")
separate_arguments(libs UNIX_COMMAND "${libs}")
separate_arguments(static_libs UNIX_COMMAND "${static_libs}")
foreach(f IN LISTS cflags libs)
  if(f MATCHES "^-([IL])(.*)$")
    if(NOT IS_DIRECTORY "${CMAKE_MATCH_2}")
      message(FATAL_ERROR "vkprof.pc names a folder that does not exist: ${f}")
    endif()
    if(CMAKE_MATCH_1 STREQUAL "L")
      set(libdir "${CMAKE_MATCH_2}")
    endif()
  endif()
endforeach()
# The shared library (what -lvkprof picks).
run(${C_COMPILER} -std=c11 ${SOURCE_DIR}/tests/packaging/consumer/main.c -o ${WORK_DIR}/consumer_pc
    ${cflags} ${libs})
set(ENV{LD_LIBRARY_PATH} "${libdir}")
run(${WORK_DIR}/consumer_pc)
unset(ENV{LD_LIBRARY_PATH})
message(STATUS "pkg-config: ${LAST_OUT}")
# The archive with --static's Libs.private.
list(TRANSFORM static_libs REPLACE "^-lvkprof$" "-l:libvkprof.a")
run(${C_COMPILER} -std=c11 ${SOURCE_DIR}/tests/packaging/consumer/main.c -o ${WORK_DIR}/consumer_pc_static
    ${cflags} ${static_libs})
run(${WORK_DIR}/consumer_pc_static)
message(STATUS "pkg-config --static: ${LAST_OUT}")
