cmake_minimum_required(VERSION 3.25)
# vkprof.pc and the CMake package in the layouts packagers use. Configures and
# builds a library-only copy of the project once, then installs it:
#  1. Debian: CMAKE_INSTALL_PREFIX=/usr, CMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu,
#     `DESTDIR=<stage> cmake --install`. vkprof.pc lies in
#     <stage>/usr/lib/x86_64-linux-gnu/pkgconfig; through ${pcfiledir} it must
#     give -I<stage>/usr/include and -L<stage>/usr/lib/x86_64-linux-gnu (not
#     <stage>/usr/lib/include), folders that exist and hold vkprof.h and
#     libvkprof.so / libvkprof.a. Then apps build through pkg-config (the
#     shared library, and --static) and through find_package(vkprof), and run.
#  2. The same tree moved elsewhere: `cmake --install --prefix <other>`.
#  3. An absolute CMAKE_INSTALL_LIBDIR (/usr/lib64): the .pc names it as it is
#     (checked through PKG_CONFIG_SYSROOT_DIR=<stage>, as a sysroot build does).
# The plain prefix (lib/) is the package_consumer test.
# Without pkg-config (the GPU machine; CI installs it) only the CMake half
# runs, and the test reports itself skipped.
foreach(v SOURCE_DIR WORK_DIR C_COMPILER GENERATOR READELF)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "" OR "${${v}}" MATCHES "-NOTFOUND$")
    message(FATAL_ERROR "${v} not set (or the tool was not found)")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/apps)
set(build ${WORK_DIR}/build)
set(multiarch lib/x86_64-linux-gnu)
if(PKG_CONFIG AND NOT PKG_CONFIG MATCHES "-NOTFOUND$")
  set(have_pc ON)
else()
  set(have_pc OFF)
endif()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  string(STRIP "${out}" out)
  set(LAST_OUT "${out}" PARENT_SCOPE)
endfunction()

# pkg-config's answer for the .pc below pcdir (with an optional sysroot), the
# folders of its -I and -L flags, which must exist.
function(pc_flags pcdir sysroot)
  if(NOT have_pc)
    return()
  endif()
  set(ENV{PKG_CONFIG_PATH} "${pcdir}")
  set(ENV{PKG_CONFIG_LIBDIR} "${pcdir}")
  set(ENV{PKG_CONFIG_SYSROOT_DIR} "${sysroot}")
  run(${PKG_CONFIG} --cflags vkprof)
  set(cflags "${LAST_OUT}")
  run(${PKG_CONFIG} --libs vkprof)
  set(libs "${LAST_OUT}")
  run(${PKG_CONFIG} --libs --static vkprof)
  set(static_libs "${LAST_OUT}")
  unset(ENV{PKG_CONFIG_SYSROOT_DIR})
  set(incdirs)
  set(libdirs)
  separate_arguments(all UNIX_COMMAND "${cflags} ${libs} ${static_libs}")
  foreach(f IN LISTS all)
    if(f MATCHES "^-I(.*)$")
      list(APPEND incdirs "${CMAKE_MATCH_1}")
    elseif(f MATCHES "^-L(.*)$")
      list(APPEND libdirs "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  foreach(d IN LISTS incdirs libdirs)
    if(NOT IS_DIRECTORY "${d}")
      message(FATAL_ERROR "${pcdir}/vkprof.pc names a folder that does not exist: ${d}\n"
                          "cflags: ${cflags}\nlibs: ${libs}")
    endif()
  endforeach()
  if(NOT static_libs MATCHES "-lm( |$)")
    message(FATAL_ERROR "pkg-config --static --libs vkprof lacks -lm: ${static_libs}")
  endif()
  message(STATUS "${pcdir}/vkprof.pc: ${cflags} ${libs}")
  set(PC_CFLAGS "${cflags}" PARENT_SCOPE)
  set(PC_LIBS "${libs}" PARENT_SCOPE)
  set(PC_STATIC_LIBS "${static_libs}" PARENT_SCOPE)
  set(PC_INCDIRS "${incdirs}" PARENT_SCOPE)
  set(PC_LIBDIRS "${libdirs}" PARENT_SCOPE)
endfunction()

# Expect exactly these -I and -L folders.
function(expect_dirs want_inc want_lib)
  file(REAL_PATH "${want_inc}" want_inc)
  file(REAL_PATH "${want_lib}" want_lib)
  foreach(kind inc lib)
    if(NOT have_pc)
      break()
    endif()
    if(kind STREQUAL inc)
      set(got ${PC_INCDIRS})
    else()
      set(got ${PC_LIBDIRS})
    endif()
    list(REMOVE_DUPLICATES got)
    list(LENGTH got n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "want one -${kind} folder, got '${got}'")
    endif()
    file(REAL_PATH "${got}" got)
    if(NOT got STREQUAL want_${kind})
      message(FATAL_ERROR "-${kind} folder is ${got}, want ${want_${kind}}")
    endif()
  endforeach()
  if(NOT EXISTS ${want_inc}/vkprof/vkprof.h)
    message(FATAL_ERROR "no vkprof/vkprof.h under ${want_inc}")
  endif()
  foreach(f libvkprof.a libvkprof.so libvkprof.so.0)
    if(NOT EXISTS ${want_lib}/${f})
      message(FATAL_ERROR "no ${f} in ${want_lib}")
    endif()
  endforeach()
endfunction()

# Build and run the consumer (tests/packaging/consumer/main.c) through pkg-config, linked
# to libvkprof.so and, with --static, to libvkprof.a.
function(pc_consumers tag libdir)
  if(NOT have_pc)
    return()
  endif()
  separate_arguments(cflags UNIX_COMMAND "${PC_CFLAGS}")
  separate_arguments(libs UNIX_COMMAND "${PC_LIBS}")
  separate_arguments(static_libs UNIX_COMMAND "${PC_STATIC_LIBS}")
  set(exe ${WORK_DIR}/apps/${tag}_shared)
  run(${C_COMPILER} -std=c11 -Wall -Werror ${cflags} ${SOURCE_DIR}/tests/packaging/consumer/main.c
      -o ${exe} ${libs})
  run(${READELF} -d ${exe})
  if(NOT LAST_OUT MATCHES "\\[libvkprof\\.so\\.0\\]")
    message(FATAL_ERROR "${exe}: not linked to libvkprof.so.0:\n${LAST_OUT}")
  endif()
  set(ENV{LD_LIBRARY_PATH} "${libdir}")
  run(${exe})
  unset(ENV{LD_LIBRARY_PATH})
  message(STATUS "pkg-config, shared: ${LAST_OUT}")
  # --static: the archive, with Libs.private; the C library stays shared.
  set(exe ${WORK_DIR}/apps/${tag}_static)
  list(TRANSFORM static_libs REPLACE "^-lvkprof$" "-l:libvkprof.a")
  run(${C_COMPILER} -std=c11 -Wall -Werror ${cflags} ${SOURCE_DIR}/tests/packaging/consumer/main.c
      -o ${exe} ${static_libs})
  run(${READELF} -d ${exe})
  if(LAST_OUT MATCHES "libvkprof")
    message(FATAL_ERROR "${exe}: linked to libvkprof.so although --static")
  endif()
  run(${exe})
  message(STATUS "pkg-config, static: ${LAST_OUT}")
endfunction()

# find_package(vkprof) from a prefix, with vkprof::vkprof_shared and
# vkprof::vkprof_static.
function(cmake_consumer tag prefix)
  foreach(kind shared static)
    set(b ${WORK_DIR}/apps/cmake_${tag}_${kind})
    file(REMOVE_RECURSE ${b})
    run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/packaging/consumer -B ${b} -G ${GENERATOR}
        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
        -DVKPROF_CONSUMER_TARGET=vkprof::vkprof_${kind})
    run(${CMAKE_COMMAND} --build ${b})
    run(${b}/consumer)
    message(STATUS "find_package, vkprof::vkprof_${kind}: ${LAST_OUT}")
  endforeach()
endfunction()

# The library-only build, Debian's way.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
    -DVKPROF_BUILD_TESTS=OFF -DVKPROF_BUILD_TOOLS=OFF
    -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_LIBDIR=${multiarch})
run(${CMAKE_COMMAND} --build ${build})

# 1. DESTDIR staging.
set(stage ${WORK_DIR}/stage)
set(ENV{DESTDIR} ${stage})
run(${CMAKE_COMMAND} --install ${build})
unset(ENV{DESTDIR})
set(pcdir ${stage}/usr/${multiarch}/pkgconfig)
if(NOT EXISTS ${pcdir}/vkprof.pc)
  message(FATAL_ERROR "no vkprof.pc in ${pcdir}")
endif()
pc_flags(${pcdir} "")
expect_dirs(${stage}/usr/include ${stage}/usr/${multiarch})
pc_consumers(debian ${stage}/usr/${multiarch})
cmake_consumer(debian ${stage}/usr)

# 2. The same build installed to another prefix at install time.
set(moved ${WORK_DIR}/moved)
run(${CMAKE_COMMAND} --install ${build} --prefix ${moved})
pc_flags(${moved}/${multiarch}/pkgconfig "")
expect_dirs(${moved}/include ${moved}/${multiarch})
pc_consumers(moved ${moved}/${multiarch})

# 3. An absolute libdir: the .pc names /usr/lib64 itself; below a sysroot
#    pkg-config prefixes it.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -DCMAKE_INSTALL_LIBDIR=/usr/lib64)
run(${CMAKE_COMMAND} --build ${build})
set(stage ${WORK_DIR}/stage-abs)
set(ENV{DESTDIR} ${stage})
run(${CMAKE_COMMAND} --install ${build})
unset(ENV{DESTDIR})
if(NOT EXISTS ${stage}/usr/lib64/pkgconfig/vkprof.pc)
  message(FATAL_ERROR "no vkprof.pc in ${stage}/usr/lib64/pkgconfig")
endif()
file(STRINGS ${stage}/usr/lib64/pkgconfig/vkprof.pc libdir_line REGEX "^libdir=")
if(NOT libdir_line STREQUAL "libdir=/usr/lib64")
  message(FATAL_ERROR "absolute libdir: vkprof.pc has '${libdir_line}'")
endif()
pc_flags(${stage}/usr/lib64/pkgconfig ${stage})
expect_dirs(${stage}/usr/include ${stage}/usr/lib64)
pc_consumers(abs ${stage}/usr/lib64)
if(NOT have_pc)
  message(STATUS "SKIPPED: pkg-config is not installed: vkprof.pc was not checked")
endif()
