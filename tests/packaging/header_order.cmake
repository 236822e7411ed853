cmake_minimum_required(VERSION 3.25)
# Compiles header_order.c (no link) as C11 and as C++11/17, with vkprof.h
# before and after <vulkan/vulkan.h>, and once more where the app defines
# VK_NO_PROTOTYPES itself. All with -Wall -Wextra -Werror; C also with
# -Werror=implicit-function-declaration. A missing C++ compiler fails.
if(NOT CXX_COMPILER OR NOT EXISTS "${CXX_COMPILER}")
  message(FATAL_ERROR "no C++ compiler (g++): install it (scripts/setup.sh)")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(inc)
foreach(d ${INCLUDE_DIRS})
  list(APPEND inc -I${d})
endforeach()
set(langs
  "c11|${C_COMPILER}|-x,c,-std=c11,-Werror=implicit-function-declaration"
  "c++11|${CXX_COMPILER}|-x,c++,-std=c++11"
  "c++17|${CXX_COMPILER}|-x,c++,-std=c++17")
set(variants
  "vkprof-first|-DVKPROF_FIRST"
  "vulkan-first|-DVKPROF_VULKAN_FIRST"
  "app-no-prototypes-vkprof-first|-DAPP_NO_PROTOTYPES,-DVKPROF_FIRST"
  "app-no-prototypes-vulkan-first|-DAPP_NO_PROTOTYPES")
set(failed 0)
set(count 0)
foreach(l ${langs})
  string(REPLACE "|" ";" l "${l}")
  list(GET l 0 lname)
  list(GET l 1 cc)
  list(SUBLIST l 2 -1 lflags)
  string(REPLACE "," ";" lflags "${lflags}")
  foreach(v ${variants})
    string(REPLACE "|" ";" v "${v}")
    list(GET v 0 vname)
    list(SUBLIST v 1 -1 vflags)
    string(REPLACE "," ";" vflags "${vflags}")
    execute_process(
      COMMAND ${cc} ${lflags} -Wall -Wextra -Werror ${vflags} ${inc}
              -c ${SOURCE} -o ${WORK_DIR}/${lname}-${vname}.o
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    math(EXPR count "${count} + 1")
    if(rc EQUAL 0)
      message(STATUS "ok   ${lname} ${vname}")
    else()
      math(EXPR failed "${failed} + 1")
      message(STATUS "FAIL ${lname} ${vname}:\n${out}${err}")
    endif()
  endforeach()
endforeach()
if(NOT failed EQUAL 0)
  message(FATAL_ERROR "${failed} of ${count} compilations failed")
endif()
message(STATUS "all ${count} compilations passed")
