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

add_executable(test_names ${CMAKE_CURRENT_SOURCE_DIR}/layer/test_names.c)
target_link_libraries(test_names PRIVATE vkprof_layer_names)
target_compile_options(test_names PRIVATE ${VKPROF_WARNINGS})
add_dependencies(test_names vkprof_names_spv)
add_test(NAME test_names COMMAND test_names ${NAMES_TEST_DIR}/rmsnorm.spv
  ${NAMES_TEST_DIR}/rmsnorm_g.spv ${NAMES_TEST_DIR}/rmsnorm_gV.spv ${NAMES_TEST_DIR}/softmax.spv
  ${NAMES_TEST_DIR}/tmp)
add_test(NAME test_names_matvec COMMAND test_names ${NAMES_TEST_DIR}/matvec.spv
  ${NAMES_TEST_DIR}/matvec_g.spv ${NAMES_TEST_DIR}/rmsnorm_gV.spv ${NAMES_TEST_DIR}/rmsnorm.spv
  ${NAMES_TEST_DIR}/tmp_matvec)
file(MAKE_DIRECTORY ${NAMES_TEST_DIR}/tmp_matvec)
set_tests_properties(test_names test_names_matvec PROPERTIES ENVIRONMENT "${VKPROF_TEST_ENV}"
  TIMEOUT 120)
set_tests_properties(test_names PROPERTIES FIXTURES_SETUP names_patched)
# The module test_names patched is valid SPIR-V: the patch is what a runtime
# could hand the driver.
find_program(SPIRV_VAL spirv-val)
if(SPIRV_VAL)
  add_test(NAME names_patched_valid
    COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${NAMES_TEST_DIR}/tmp/patched.spv)
  set_tests_properties(names_patched_valid PROPERTIES FIXTURES_REQUIRED names_patched TIMEOUT 60)
endif()
