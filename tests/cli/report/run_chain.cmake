# The whole chain on lavapipe: `vkprof decode --ranks 2 --trace` (one trace per
# rank, rank 1 held back before each attention all-reduce), `vkprof merge`,
# `vkprof report` of the merged trace: rank 1 must be the slowest; the same
# ranks' .pftrace files must merge into the same report. The
# validation layer is forced on (VK_INSTANCE_LAYERS); any message fails.
# -DVKPROF= -DWORKDIR=
file(REMOVE_RECURSE ${WORKDIR})
file(MAKE_DIRECTORY ${WORKDIR})
function(run)
  execute_process(COMMAND ${VKPROF} ${ARGN} WORKING_DIRECTORY ${WORKDIR}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "vkprof ${ARGN}: exit status ${rc}\n--- stdout\n${out}--- stderr\n${err}---")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vkprof ${ARGN}: exit status ${rc}")
  endif()
  if("${out}${err}" MATCHES "VUID-|Validation (Error|Warning)")
    message(FATAL_ERROR "vkprof ${ARGN}: the validation layer complained")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
set(ENV{VKPROF_TRACE_FORMAT} both) # each rank's trace as JSON and as .pftrace
run(decode --preset tiny --tokens 4 --ranks 2 --profile host --trace t.json
  --skew-rank 1 --skew-us 20000)
unset(ENV{VKPROF_TRACE_FORMAT})
run(merge t.rank0.json t.rank1.json -o merged.json --names first,late)
if(NOT out MATCHES "t.rank1.json: the same boot: exact")
  message(FATAL_ERROR "the two ranks' traces did not merge exactly")
endif()
run(report merged.json --svg merged.svg)
foreach(want "ranks: 2 \\(merged by vkprof merge, same_boot\\)"
             "\n  first +4 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0\n"
             "slowest rank: late \\(the least rendezvous wait"
             "host buckets \\(2 ranks\\)")
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "the report does not match: ${want}")
  endif()
endforeach()

# The native Perfetto traces of the same ranks merge into the same figures:
# the report of both merges is one text but for its first line (the path).
run(merge t.rank0.pftrace t.rank1.pftrace -o merged_pf.json --names first,late)
run(report merged.json)
string(REGEX REPLACE "^[^\n]*\n" "" from_json "${out}")
run(report merged_pf.json)
string(REGEX REPLACE "^[^\n]*\n" "" from_pftrace "${out}")
if(NOT from_json STREQUAL from_pftrace)
  message(FATAL_ERROR "the merge of the .pftrace files reports differently from the JSON's")
endif()
