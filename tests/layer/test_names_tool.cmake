# `vkprof names` through the binary (tools/names/cmd_names.c).
#   cmake -DVKPROF= -DTEST_NAMES= -DFIXTURE=lib.so -DDIR=<spv dir> -DTMP= -P test_names_tool.cmake
# DIR holds rmsnorm.spv, softmax.spv, matvec.spv, matvec_g.spv and plain/ g/
# (every shader of the repo without and with -g); FIXTURE embeds rmsnorm,
# softmax and matvec_g ggml-style and busy as a word array.
function(run_names rc_want)  # ARGN: the arguments; sets out, err in the caller
  execute_process(COMMAND ${VKPROF} names ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o
                  ERROR_VARIABLE e)
  message(STATUS "vkprof names ${ARGN}: exit ${rc}\n--- stdout\n${o}--- stderr\n${e}---")
  if(NOT "${rc}" STREQUAL "${rc_want}")
    message(FATAL_ERROR "exit status ${rc}, expected ${rc_want}")
  endif()
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()
function(expect what text regex)
  if(NOT "${text}" MATCHES "${regex}")
    message(FATAL_ERROR "${what} does not match '${regex}'")
  endif()
endfunction()
function(hash_of var map name)  # the hash on the line naming `name`
  file(STRINGS ${map} lines REGEX "^[0-9a-f]+ ${name}$")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${map}: ${n} lines name '${name}'")
  endif()
  string(REGEX REPLACE " .*" "" h "${lines}")
  set(${var} ${h} PARENT_SCOPE)
endfunction()
file(REMOVE_RECURSE ${TMP})
file(MAKE_DIRECTORY ${TMP})

# .spv inputs: named by the file name; the -g build is the same module
run_names(0 -o ${TMP}/spv.map ${DIR}/rmsnorm.spv ${DIR}/softmax.spv ${DIR}/matvec.spv
          ${DIR}/matvec_g.spv)
file(READ ${TMP}/spv.map spv_map)
expect("spv.map" "${spv_map}" "^# vkprof name map [^\n]*, 3 modules\n")
expect("spv.map" "${spv_map}" "\n[0-9a-f]+ matvec\n#   the same module as: matvec_g\n")
hash_of(h_rms ${TMP}/spv.map rmsnorm)
hash_of(h_soft ${TMP}/spv.map softmax)
hash_of(h_mv ${TMP}/spv.map matvec)
execute_process(COMMAND ${TEST_NAMES} --map ${TMP}/spv.map 3 ${h_rms} rmsnorm ${h_soft} softmax
                        ${h_mv} matvec RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spv.map does not load as a name map")
endif()

# the ELF: ggml-style _data arrays (the _len integers and the non-SPIR-V
# objects are not modules), the -g build embedded hashes like the plain file
run_names(0 -o ${TMP}/so.map ${FIXTURE})
expect("stderr" "${err}" ": 4 SPIR-V modules\n$")
file(READ ${TMP}/so.map so_map)
foreach(bad _len not_spirv tiny zeroed _data\n)
  string(FIND "${so_map}" "${bad}" at)
  if(at GREATER -1)
    message(FATAL_ERROR "so.map names '${bad}'")
  endif()
endforeach()
execute_process(COMMAND ${TEST_NAMES} --map ${TMP}/so.map 4 ${h_rms} rms_norm_f32
                        ${h_soft} soft_max_f32 ${h_mv} mul_mat_vec_f16_f32 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "so.map: the embedded modules do not hash like the .spv files")
endif()
hash_of(h_busy ${TMP}/so.map busy)

# every shader of the repo: the -g builds give the same map, byte for byte
file(GLOB plain ${DIR}/plain/*.spv)
file(GLOB g ${DIR}/g/*.spv)
list(LENGTH plain n_plain)
if(n_plain LESS 10)
  message(FATAL_ERROR "only ${n_plain} shaders in ${DIR}/plain")
endif()
run_names(0 -o ${TMP}/plain.map ${plain})
run_names(0 --output=${TMP}/g.map ${g})
file(READ ${TMP}/plain.map a)
file(READ ${TMP}/g.map b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "the -g builds hash unlike the plain ones:\n${a}\n${b}")
endif()
expect("plain.map" "${a}" ", ${n_plain} modules\n")
# to stdout, the same text
run_names(0 ${plain})
if(NOT out STREQUAL a)
  message(FATAL_ERROR "stdout differs from the -o file")
endif()

# errors: nothing written, a message naming the input
file(WRITE ${TMP}/text.txt "hello\n")
run_names(1 -o ${TMP}/e.map ${TMP}/no-such.spv)
expect("stderr" "${err}" "no-such.spv: cannot open: No such file or directory")
run_names(1 -o ${TMP}/e.map ${DIR}/rmsnorm.spv ${TMP}/text.txt)
expect("stderr" "${err}" "text.txt: neither SPIR-V nor an ELF file")
run_names(1 -o ${TMP}/e.map ${DIR}/tmp/cut.spv) # test_names wrote it: a module cut short
expect("stderr" "${err}" "cut.spv: starts like SPIR-V but is not a valid module")
run_names(1 -o ${TMP}/e.map ${TEST_NAMES}) # an ELF with no SPIR-V in it
expect("stderr" "${err}" ": no SPIR-V module in its symbols' data")
run_names(1 -o ${TMP}/e.map ${TMP})
expect("stderr" "${err}" "not a regular file")
if(EXISTS ${TMP}/e.map)
  message(FATAL_ERROR "a failed run wrote its map")
endif()
run_names(2)
expect("stderr" "${err}" "no input")
run_names(2 --bogus x)
expect("stderr" "${err}" "unknown option '--bogus'")
run_names(1 -o ${TMP}/no-such-dir/x.map ${DIR}/rmsnorm.spv)
run_names(0 --help)
expect("stdout" "${out}" "^usage: vkprof names")
