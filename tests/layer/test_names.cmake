# The layer's naming module (src/layer/names.h) on real SPIR-V: glslang builds
# one shader plain, with -g and with -gV, and another shader; test_names
# hashes them, patches float controls in, and loads name map files.
include(${PROJECT_SOURCE_DIR}/src/layer/names.cmake)
set(NAMES_TEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/layer)
file(MAKE_DIRECTORY ${NAMES_TEST_DIR}/tmp)
set(NAMES_SPV)
function(names_spv out src)  # ARGN: extra glslang flags
  add_custom_command(OUTPUT ${NAMES_TEST_DIR}/${out}
    COMMAND Vulkan::glslangValidator -V --target-env vulkan1.2 ${ARGN} -o ${NAMES_TEST_DIR}/${out}
            ${PROJECT_SOURCE_DIR}/shaders/${src}
    DEPENDS ${PROJECT_SOURCE_DIR}/shaders/${src} COMMENT "glslang ${out}" VERBATIM)
  set(NAMES_SPV ${NAMES_SPV} ${NAMES_TEST_DIR}/${out} PARENT_SCOPE)
endfunction()
names_spv(rmsnorm.spv decode_rmsnorm.comp)
names_spv(rmsnorm_g.spv decode_rmsnorm.comp -g)
names_spv(rmsnorm_gV.spv decode_rmsnorm.comp -gV)
names_spv(softmax.spv decode_softmax.comp)
names_spv(matvec.spv decode_matvec.comp)
names_spv(matvec_g.spv decode_matvec.comp -g)
add_custom_target(vkprof_names_spv DEPENDS ${NAMES_SPV})

# pure C on files: no Vulkan device (label unit), like the checks below but
# the ggml one
vkprof_test(NAME test_names SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_names.c
  LIBS vkprof_layer_names TIMEOUT 120 LABELS unit PROPERTIES FIXTURES_SETUP names_patched
  COMMAND test_names ${NAMES_TEST_DIR}/rmsnorm.spv ${NAMES_TEST_DIR}/rmsnorm_g.spv
          ${NAMES_TEST_DIR}/rmsnorm_gV.spv ${NAMES_TEST_DIR}/softmax.spv ${NAMES_TEST_DIR}/tmp)
add_dependencies(test_names vkprof_names_spv)
vkprof_test(NAME test_names_matvec TIMEOUT 120 LABELS unit
  COMMAND test_names ${NAMES_TEST_DIR}/matvec.spv ${NAMES_TEST_DIR}/matvec_g.spv
          ${NAMES_TEST_DIR}/rmsnorm_gV.spv ${NAMES_TEST_DIR}/rmsnorm.spv ${NAMES_TEST_DIR}/tmp_matvec)
file(MAKE_DIRECTORY ${NAMES_TEST_DIR}/tmp_matvec)
# The module test_names patched is valid SPIR-V: the patch is what a runtime
# could hand the driver.
find_program(SPIRV_VAL spirv-val)
if(SPIRV_VAL)
  vkprof_test(NAME names_patched_valid TIMEOUT 60 LABELS unit
    PROPERTIES FIXTURES_REQUIRED names_patched
    COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${NAMES_TEST_DIR}/tmp/patched.spv)
endif()

# `vkprof names` (tools/names/cmd_names.c) on .spv files and on an ELF shared object
# that embeds SPIR-V as llama.cpp's libggml-vulkan.so does
# (test_names_embed.cmake writes the ggml-style arrays).
if(TARGET vkprof_cli)
  set(NAMES_GEN_C ${NAMES_TEST_DIR}/names_fixture_gen.c)
  add_custom_command(OUTPUT ${NAMES_GEN_C}
    COMMAND ${CMAKE_COMMAND} -DOUT=${NAMES_GEN_C}
      "-DSPV=${NAMES_TEST_DIR}/rmsnorm.spv=rms_norm_f32|${NAMES_TEST_DIR}/softmax.spv=soft_max_f32|${NAMES_TEST_DIR}/matvec_g.spv=mul_mat_vec_f16_f32"
      -P ${CMAKE_CURRENT_SOURCE_DIR}/test_names_embed.cmake
    DEPENDS ${NAMES_TEST_DIR}/rmsnorm.spv ${NAMES_TEST_DIR}/softmax.spv
            ${NAMES_TEST_DIR}/matvec_g.spv ${CMAKE_CURRENT_SOURCE_DIR}/test_names_embed.cmake
    COMMENT "ggml-style SPIR-V arrays" VERBATIM)
  add_library(names_fixture SHARED ${CMAKE_CURRENT_SOURCE_DIR}/test_names_fixture.c
                                   ${NAMES_GEN_C})
  target_include_directories(names_fixture PRIVATE ${VKPROF_SHADER_DIR})
  add_dependencies(names_fixture vkprof_shaders)
  set_target_properties(names_fixture PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NAMES_TEST_DIR})
  # every shader of the repo, plain and with -g, under the same file names
  file(GLOB NAMES_ALL_COMP ${PROJECT_SOURCE_DIR}/shaders/*.comp)
  file(MAKE_DIRECTORY ${NAMES_TEST_DIR}/plain ${NAMES_TEST_DIR}/g ${NAMES_TEST_DIR}/tool)
  set(NAMES_ALL_SPV)
  foreach(comp ${NAMES_ALL_COMP})
    get_filename_component(base ${comp} NAME_WE)
    names_spv(plain/${base}.spv ${base}.comp)
    names_spv(g/${base}.spv ${base}.comp -g)
    list(APPEND NAMES_ALL_SPV ${NAMES_TEST_DIR}/plain/${base}.spv ${NAMES_TEST_DIR}/g/${base}.spv)
  endforeach()
  add_custom_target(vkprof_names_all_spv DEPENDS ${NAMES_ALL_SPV})
  add_dependencies(names_fixture vkprof_names_all_spv)
  vkprof_test(NAME test_names_tool TIMEOUT 120 LABELS unit
    PROPERTIES FIXTURES_REQUIRED names_patched
    COMMAND ${CMAKE_COMMAND} -DVKPROF=$<TARGET_FILE:vkprof_cli>
      -DTEST_NAMES=$<TARGET_FILE:test_names> -DFIXTURE=$<TARGET_FILE:names_fixture>
      -DDIR=${NAMES_TEST_DIR} -DTMP=${NAMES_TEST_DIR}/tool
      -P ${CMAKE_CURRENT_SOURCE_DIR}/test_names_tool.cmake)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  vkprof_test(NAME test_names_ggml TIMEOUT 120 LABELS unit
    PROPERTIES SKIP_REGULAR_EXPRESSION "libggml-vulkan.so is not installed under [^\n]*: skipped"
    COMMAND ${CMAKE_COMMAND} -DVKPROF=$<TARGET_FILE:vkprof_cli>
      -DTEST_NAMES=$<TARGET_FILE:test_names> -DCLIENTS=${VKPROF_TESTS_DIR}/clients
      -DTMP=${NAMES_TEST_DIR}/ggml -DPYTHON=${Python3_EXECUTABLE}
      -DPATCHER=${CMAKE_CURRENT_SOURCE_DIR}/test_names_ggml_patch.py
      -P ${CMAKE_CURRENT_SOURCE_DIR}/test_names_ggml.cmake)
endif()

# The dispatch args' local size and specialisation text (names.h) on modules
# assembled word by word (tests/layer/test_workgroup.c).
vkprof_test(NAME test_workgroup SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_workgroup.c
            LIBS vkprof_layer_names TIMEOUT 60 LABELS unit)
