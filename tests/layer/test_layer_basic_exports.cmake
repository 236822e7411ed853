# libVkLayer_vkprof.so exports the loader interface v2 and the four
# introspection functions Android's loader calls, and nothing else (no
# vkprof_* of the library it carries, no names module, no libc wrappers).
#   cmake -DNM=<nm> -DLIB=<libVkLayer_vkprof.so> -P test_layer_basic_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D ${LIB} failed (${rc})")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(got "")
foreach(l ${lines})
  if(l MATCHES "^[0-9a-fA-F]+ [A-Za-z] ([^ ]+)$")
    list(APPEND got ${CMAKE_MATCH_1})
  endif()
endforeach()
list(SORT got)
set(want vkEnumerateDeviceExtensionProperties vkEnumerateDeviceLayerProperties
         vkEnumerateInstanceExtensionProperties vkEnumerateInstanceLayerProperties
         vkGetDeviceProcAddr vkGetInstanceProcAddr vkNegotiateLoaderLayerInterfaceVersion)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "the layer exports [${got}], want exactly [${want}]")
endif()
message(STATUS "the layer exports exactly: ${got}")
