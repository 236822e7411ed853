# One case of tests/layer/test_layer_linked.cmake:
#   cmake -DVKPROF= -DAPP= -DLAYER_DIR= -DCASE= -DWORK= -P test_layer_linked_run.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
unset(ENV{VK_INSTANCE_LAYERS})
unset(ENV{VKPROF_LAYER_DIR})
set(VAL VK_LAYER_KHRONOS_validation)
set(OVL VK_LAYER_MESA_overlay)

# Run a command with a time limit; a hang fails. Sets rc, out, err.
function(timed_run limit)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} TIMEOUT ${limit}
                  RESULT_VARIABLE r OUTPUT_VARIABLE o ERROR_VARIABLE e)
  message(STATUS "${ARGN}: ${r}\n--- stdout\n${o}--- stderr\n${e}---")
  if("${r}" MATCHES "timeout|Process terminated")
    message(FATAL_ERROR "hung: still running after ${limit} s: ${ARGN}")
  endif()
  set(rc "${r}" PARENT_SCOPE)
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()
function(expect what text regex)
  if(NOT "${text}" MATCHES "${regex}")
    message(FATAL_ERROR "${what} does not match '${regex}'")
  endif()
endfunction()
function(expect_not what text regex)
  if("${text}" MATCHES "${regex}")
    message(FATAL_ERROR "${what} matches '${regex}'")
  endif()
endfunction()

# Is a layer's manifest installed (the overlay comes with mesa-vulkan-drivers)?
set(have_overlay FALSE)
foreach(d /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d)
  if(EXISTS ${d}/VkLayer_MESA_overlay.json)
    set(have_overlay TRUE)
  endif()
endforeach()

if(CASE STREQUAL "orders")
  set(lsan_saved "$ENV{LSAN_OPTIONS}")
  # VK_INSTANCE_LAYERS lists the layer closest to the app first; vkprof run
  # appends VK_LAYER_vkprof unless it is listed already.
  set(orders "alone|" "validation_above|${VAL}" "validation_below|VK_LAYER_vkprof:${VAL}")
  if(have_overlay)
    list(APPEND orders "first|VK_LAYER_vkprof:${OVL}" "between|${OVL}:VK_LAYER_vkprof:${VAL}"
                       "last|${VAL}:${OVL}")
  else()
    message(WARNING "VK_LAYER_MESA_overlay is not installed: the first/between/last orders with another layer are not run")
  endif()
  foreach(o ${orders})
    string(REPLACE "|" ";" o "${o}")
    list(GET o 0 name)
    list(LENGTH o n)
    if(n GREATER 1)
      list(GET o 1 layers)
      set(ENV{VK_INSTANCE_LAYERS} "${layers}")
    else()
      set(layers "")
      unset(ENV{VK_INSTANCE_LAYERS})
    endif()
    # Mesa's overlay layer leaks 520 bytes of its own, and the loader unloads
    # it before LeakSanitizer looks, so no suppression can name it
    # (VK_INSTANCE_LAYERS=VK_LAYER_MESA_overlay linked_app, without vkprof,
    # in the ASan build): leaks are not looked for where it is loaded
    if(layers MATCHES "MESA_overlay")
      set(ENV{LSAN_OPTIONS} "${lsan_saved}:detect_leaks=0")
    else()
      set(ENV{LSAN_OPTIONS} "${lsan_saved}")
    endif()
    # the app's own messenger fails it on any validation message (of the app's
    # calls, and below ours, of every command the layer adds)
    set(valflag)
    if(name MATCHES "validation")
      set(valflag --validation)
    endif()
    timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/${name} --layer-dir ${LAYER_DIR} --
              ${APP} --iterations 3 --dispatches 6 --progress ${WORK}/${name}.progress ${valflag})
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${name}: exit ${rc}")
    endif()
    # 3 iterations of 6 dispatches, alpha and beta alternating: 9 each, all timed
    expect("${name}: stderr" "${err}" "\n +alpha +9 ")
    expect("${name}: stderr" "${err}" "\n +beta +9 ")
    expect("${name}: stderr" "${err}" "lost: none")
    file(READ ${WORK}/${name}.progress p)
    expect("${name}: progress" "${p}" "^iterations 3 alpha 9 beta 9")
  endforeach()
  unset(ENV{VK_INSTANCE_LAYERS})
  set(ENV{LSAN_OPTIONS} "${lsan_saved}")
  # the instance-only process too (no device: nothing to time, and no hang)
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/nodevice --layer-dir ${LAYER_DIR} -- ${APP} --no-device)
  expect("no device: stderr" "${err}" "created no Vulkan device")
elseif(CASE STREQUAL "off")
  # the layer loaded but off (VKPROF_LAYER=off), without vkprof run, alone
  # and with validation on either side
  # added to what is there (the validation layer may be found only through it)
  set(ENV{VK_ADD_LAYER_PATH} "${LAYER_DIR}:$ENV{VK_ADD_LAYER_PATH}")
  set(ENV{VKPROF_LAYER} off)
  set(ENV{VKPROF_LAYER_OUTPUT_DIR} ${WORK}/out)
  foreach(layers "VK_LAYER_vkprof" "${VAL}:VK_LAYER_vkprof" "VK_LAYER_vkprof:${VAL}")
    set(ENV{VK_INSTANCE_LAYERS} "${layers}")
    timed_run(60 ${APP} --iterations 2 --progress ${WORK}/off.progress --validation)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "VKPROF_LAYER=off, VK_INSTANCE_LAYERS=${layers}: exit ${rc}")
    endif()
    file(READ ${WORK}/off.progress p)
    expect("off: progress" "${p}" "^iterations 2 alpha 6 beta 6")
  endforeach()
  # the app's own timestamps (linked_app --own-stamps: a profiler inside the
  # app, beside the layer), each placement, with validation on
  set(ENV{VK_INSTANCE_LAYERS} "VK_LAYER_vkprof")
  foreach(where reset begin mid end both)
    timed_run(60 ${APP} --iterations 3 --dispatches 6 --own-stamps ${where} --time-record --validation)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "--own-stamps ${where}: exit ${rc}\n${out}${err}")
    endif()
    expect("own stamps ${where}" "${out}" "record_ns_per_dispatch [0-9.]+ over 12 dispatches")
  endforeach()
  timed_run(60 ${APP} --own-stamps nowhere)
  if(rc EQUAL 0)
    message(FATAL_ERROR "--own-stamps nowhere was taken")
  endif()
elseif(CASE STREQUAL "deaths")
  # the app dies at several points, in several ways: every scope collected
  # before the end is in its one trace, the report says how it ended
  set(D 4)
  foreach(how sigint sigterm sigkill segv abort _exit exit)
    foreach(at device submitted waited)
      set(o ${WORK}/${how}-${at})
      timed_run(60 ${VKPROF} run --rotate 0 -o ${o} --layer-dir ${LAYER_DIR} --
                ${APP} --iterations 4 --dispatches ${D} --die ${how} --die-at ${at} --die-iter 1
                --progress ${o}.progress)
      # iterations whose wait returned (the layer collected them)
      set(done 0)
      if(EXISTS ${o}.progress)
        file(READ ${o}.progress p)
        string(REGEX REPLACE "^iterations ([0-9]+).*" "\\1" done "${p}")
      endif()
      math(EXPR want "${done} * ${D}")
      file(GLOB sums ${o}/linked_app-*.summary.json)
      file(GLOB traces ${o}/linked_app-*.trace.json)
      list(LENGTH sums ns)
      list(LENGTH traces nt)
      if(NOT ns EQUAL 1 OR NOT nt EQUAL 1)
        message(FATAL_ERROR "${how} at ${at}: ${ns} summaries and ${nt} traces, expected one each")
      else()
        file(READ ${traces} tr)
      endif()
      string(REGEX MATCHALL "\"cat\":\"gpu\"" g "${tr}")
      list(LENGTH g ngpu)
      if(NOT ngpu EQUAL want)
        message(FATAL_ERROR "${how} at ${at}: ${ngpu} GPU slices in the trace, ${want} dispatches collected before the end")
      endif()
      # no spool left behind, and the report says how it ended
      if(EXISTS ${o}/.vkprof AND NOT "${how}" STREQUAL "none")
        file(GLOB left ${o}/.vkprof/*)
        if(NOT left STREQUAL "")
          message(FATAL_ERROR "${how} at ${at}: spools left: ${left}")
        endif()
      endif()
      if(how MATCHES "^sig|segv|abort")
        expect("${how} at ${at}: stderr" "${err}" "\n  ended: killed by signal [0-9]+ \\([^)]+\\): complete up to its last collection; finished by vkprof run\n")
      elseif(how STREQUAL "_exit")
        expect("${how} at ${at}: stderr" "${err}" "\n  ended: exit status 0, without the layer's exit \\(_exit[^\n]*: complete up to its last collection; finished by vkprof run\n")
      else()
        expect("${how} at ${at}: stderr" "${err}" "\n  ended: exit status 0; finished by layer\n")
      endif()
      if(at STREQUAL "submitted")
        # the iteration submitted and never waited for: its D dispatches were
        # executed and timed, never collected (a clean exit collects nothing
        # at teardown either: no Vulkan call then), and the report says so
        # (a context that checkpointed at its destroy counts them pending)
        expect("${how} at ${at}: stderr" "${err}" "(\n      pending: ${D} scopes ran but were never read \\(the process ended first\\)\n|\n    queue family 0: ${D} timed dispatches ran after the last collection and were never read \\(the process ended first\\): not in the trace\n)")
      else()
        expect_not("${how} at ${at}: stderr" "${err}" "ran after the last collection|were never read")
      endif()
    endforeach()
  endforeach()
  # the window and its busy scopes in every step (--busy on), killed after
  # 4 waits: the trace finished from its spool keeps the outer phase, and
  # so the busy counter, a point a step (issue 26)
  set(o ${WORK}/default-sigkill)
  timed_run(60 ${VKPROF} run -o ${o} --busy on --layer-dir ${LAYER_DIR} --
            ${APP} --iterations 6 --dispatches ${D} --die sigkill --die-at waited --die-iter 4)
  file(GLOB traces ${o}/linked_app-*.trace.json)
  list(LENGTH traces nt)
  if(NOT nt EQUAL 1)
    message(FATAL_ERROR "default, killed: ${nt} traces, expected 1")
  endif()
  file(READ ${traces} tr)
  expect("default, killed: stderr" "${err}" "\n  ended: killed by signal 9 ")
  expect("default, killed: trace" "${tr}" "\"whole_steps\":false")
  expect("default, killed: trace" "${tr}" "\"busy_measured\":true,\"outer_phases\":\\[\"command_buffer\"\\]")
  string(REGEX MATCHALL "\"ph\":\"C\"" cs "${tr}")
  list(LENGTH cs ncs)
  if(ncs LESS 3)
    message(FATAL_ERROR "default, killed: ${ncs} GPU busy points, expected one a step (4 or 5 steps)")
  endif()
elseif(CASE STREQUAL "server")
  # a server stopped with Ctrl-C (SIGINT to vkprof run, passed on; the app
  # finishes its iteration and exits 0): its trace is whole
  set(o ${WORK}/server)
  file(REMOVE ${o}.progress)
  execute_process(COMMAND sh -c "'${VKPROF}' run -o '${o}' --layer-dir '${LAYER_DIR}' -- '${APP}' --serve --sleep-ms 10 --dispatches 4 --progress '${o}.progress' 2>'${o}.err' & vp=$!; sleep 3; kill -INT $vp; wait $vp; echo rc=$?"
                  TIMEOUT 60 RESULT_VARIABLE r OUTPUT_VARIABLE out ERROR_VARIABLE e)
  file(READ ${o}.err err)
  message(STATUS "server: ${out}\n${err}")
  expect("server: vkprof run's status" "${out}" "rc=0")
  file(READ ${o}.progress p)
  string(REGEX REPLACE "^iterations ([0-9]+).*" "\\1" done "${p}")
  math(EXPR want "${done} * 4")
  expect("server" "${err}" "\n  ended: exit status 0; finished by layer\n")
  # (the default: a window of 4 takes a step's 4 dispatches, and the busy
  # steps, 1 in 4, count theirs as left out)
  expect("server" "${err}" ": ${want} dispatches executed \\(${want} recorded\\): ([0-9]+) timed, ([0-9]+) untimed: not_in_window ([0-9]+)\n")
  string(REGEX MATCH ": ${want} dispatches executed \\(${want} recorded\\): ([0-9]+) timed, ([0-9]+) untimed: not_in_window ([0-9]+)\n" _ "${err}")
  math(EXPR sum "${CMAKE_MATCH_1} + ${CMAKE_MATCH_2}")
  if(NOT sum EQUAL want OR NOT CMAKE_MATCH_2 EQUAL CMAKE_MATCH_3 OR CMAKE_MATCH_2 EQUAL 0)
    message(FATAL_ERROR "server: ${CMAKE_MATCH_1} timed + ${CMAKE_MATCH_2} untimed, ${want} executed")
  endif()
  expect("server" "${err}" "lost: none")
  # a signal at any moment of the start (before the layer loads, while it
  # does, at the first submit) reaches the app or stops the start: never a
  # server left running
  foreach(delay 0 0.01 0.03 0.1 0.3)
    execute_process(COMMAND sh -c "'${VKPROF}' run -o '${WORK}/early' --layer-dir '${LAYER_DIR}' -- '${APP}' --serve --sleep-ms 10 2>/dev/null & vp=$!; sleep ${delay}; kill -TERM $vp; wait $vp; echo rc=$?"
                    TIMEOUT 60 RESULT_VARIABLE r OUTPUT_VARIABLE out)
    if(NOT r EQUAL 0 OR NOT out MATCHES "rc=")
      message(FATAL_ERROR "SIGTERM ${delay} s after the start: the run did not end (${r}): ${out}")
    endif()
  endforeach()
  # vkprof run killed outright: the app is told to stop, never orphaned
  set(o ${WORK}/orphan)
  file(REMOVE ${o}.progress)
  execute_process(COMMAND sh -c "'${VKPROF}' run -o '${o}' --layer-dir '${LAYER_DIR}' -- '${APP}' --serve --sleep-ms 10 --progress '${o}.progress' 2>/dev/null & vp=$!; sleep 3; kill -KILL $vp; sleep 3; cat '${o}.progress'; sleep 1; cat '${o}.progress'"
                  TIMEOUT 60 RESULT_VARIABLE r OUTPUT_VARIABLE out)
  string(REGEX MATCHALL "iterations [0-9]+" reads "${out}")
  list(LENGTH reads nr)
  list(GET reads 0 r0)
  list(GET reads 1 r1)
  if(NOT nr EQUAL 2 OR NOT r0 STREQUAL r1)
    message(FATAL_ERROR "the app ran on after vkprof run was killed: ${out}")
  endif()
  # it stopped cleanly (SIGTERM): the layer finished it
  file(GLOB sums ${o}/linked_app-*.summary.json)
  if(sums STREQUAL "")
    message(FATAL_ERROR "the app told to stop wrote no summary")
  endif()
elseif(CASE STREQUAL "fork_exec")
  # fork, in two ways: a child that does no Vulkan and exits with exit()
  # (its atexit handlers run, the layer's too): it writes nothing, and the
  # parent's work is counted once; and a child that makes its own instance
  # and device: its own files, nothing of the parent's counted twice. Each
  # only where the driver survives it without vkprof: NVIDIA's spins in the
  # forked child in both (seen on the H200 with no layer loaded).
  foreach(variant fork-novk fork)
    execute_process(COMMAND ${APP} --iterations 1 --dispatches 1 --${variant}
                    WORKING_DIRECTORY ${WORK} TIMEOUT 30 RESULT_VARIABLE probe)
    if(NOT probe EQUAL 0)
      message(WARNING "--${variant}: this driver hangs or fails in a forked child without vkprof too (${probe}): not run")
      continue()
    endif()
    set(o ${WORK}/${variant})
    timed_run(120 ${VKPROF} run --rotate 0 -o ${o} --layer-dir ${LAYER_DIR} -- ${APP} --iterations 3 --dispatches 4 --${variant} --progress ${o}.progress)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${variant}: exit ${rc}")
    endif()
    file(GLOB sums ${o}/linked_app-*.summary.json)
    list(LENGTH sums ns)
    string(REGEX MATCHALL ": 12 dispatches executed \\(12 recorded\\): 12 timed\n" rows "${err}")
    list(LENGTH rows nrows)
    if(variant STREQUAL "fork-novk")
      set(want 1) # the parent's only
    else()
      set(want 2) # the parent's and the child's
    endif()
    if(NOT ns EQUAL want OR NOT nrows EQUAL want)
      message(FATAL_ERROR "${variant}: ${ns} summaries and ${nrows} processes of 12 dispatches, expected ${want}: each process its own, none counted twice")
    endif()
    file(GLOB left ${o}/.vkprof/*)
    if(NOT left STREQUAL "")
      message(FATAL_ERROR "${variant}: left behind: ${left}")
    endif()
  endforeach()
  # exec: the first image's work is kept (finished by vkprof run), the second
  # image is its own process entry
  set(o ${WORK}/exec)
  timed_run(120 ${VKPROF} run --rotate 0 -o ${o} --layer-dir ${LAYER_DIR} -- ${APP} --iterations 3 --dispatches 4 --exec ${APP} --iterations 2 --dispatches 4)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "exec: exit ${rc}")
  endif()
  file(GLOB sums ${o}/linked_app-*.summary.json)
  list(LENGTH sums ns)
  if(NOT ns EQUAL 2)
    message(FATAL_ERROR "exec: ${ns} summaries, expected one per image")
  endif()
  expect("exec" "${err}" ": 12 dispatches executed \\(12 recorded\\): 12 timed\n")
  expect("exec" "${err}" ": 8 dispatches executed \\(8 recorded\\): 8 timed\n")
  expect("exec" "${err}" "replaced by exec")
elseif(CASE STREQUAL "folder")
  # two runs at once in one folder: each reports its own process only
  set(o ${WORK}/shared)
  execute_process(COMMAND sh -c "'${VKPROF}' run -o '${o}' --layer-dir '${LAYER_DIR}' -- '${APP}' --iterations 5 --dispatches 2 2>'${WORK}/a.err' & '${VKPROF}' run -o '${o}' --layer-dir '${LAYER_DIR}' -- '${APP}' --iterations 7 --dispatches 2 2>'${WORK}/b.err'; wait"
                  TIMEOUT 120)
  file(READ ${WORK}/a.err a)
  file(READ ${WORK}/b.err b)
  foreach(x a b)
    string(REGEX MATCHALL "\nlinked_app \\(pid [0-9]+\\)" procs "${${x}}")
    list(LENGTH procs np)
    if(NOT np EQUAL 1)
      message(FATAL_ERROR "run ${x} reported ${np} processes:\n${${x}}")
    endif()
  endforeach()
  expect("run a" "${a}" ": 10 dispatches executed")
  expect("run b" "${b}" ": 14 dispatches executed")
  file(GLOB sums ${o}/*.summary.json)
  list(LENGTH sums ns)
  if(NOT ns EQUAL 2)
    message(FATAL_ERROR "${ns} summaries in the shared folder")
  endif()
  # a user's file with a name the process could write (here the .pftrace
  # of --format both; the shell's pid is the app's after exec): never
  # written over, the process takes <exe>-<pid>.2 (no ";" in the command:
  # timed_run passes its arguments on as a list)
  set(o ${WORK}/mine)
  file(MAKE_DIRECTORY ${o})
  timed_run(60 ${VKPROF} run --rotate 0 -o ${o} --format both --layer-dir ${LAYER_DIR} -- sh -c "echo mine > '${o}'/linked_app-$$.trace.pftrace && exec '${APP}' --iterations 2 --dispatches 2")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "a user's file in the folder: exit ${rc}")
  endif()
  file(GLOB mine ${o}/linked_app-*.trace.pftrace)
  set(kept FALSE)
  set(ours FALSE)
  foreach(f ${mine})
    file(READ ${f} c)
    if(c STREQUAL "mine\n")
      set(kept TRUE)
    elseif(f MATCHES "linked_app-[0-9]+\\.2\\.trace\\.pftrace$")
      set(ours TRUE)
    endif()
  endforeach()
  if(NOT kept OR NOT ours)
    message(FATAL_ERROR "a user's file in the folder: kept ${kept}, the process's own .2 trace ${ours}: ${mine}")
  endif()
  expect("a user's file in the folder" "${err}" "linked_app-[0-9]+\\.2\\.trace\\.json")
  # the layer alone with a folder it cannot use: the app runs, warned
  # added to what is there (the validation layer may be found only through it)
  set(ENV{VK_ADD_LAYER_PATH} "${LAYER_DIR}:$ENV{VK_ADD_LAYER_PATH}")
  set(ENV{VK_INSTANCE_LAYERS} VK_LAYER_vkprof)
  set(ENV{VKPROF_LAYER_OUTPUT_DIR} /proc/nope)
  timed_run(60 ${APP} --iterations 2)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the app failed with an unusable output folder: ${rc}")
  endif()
  expect("unusable folder" "${err}" "vkprof layer: ")
  unset(ENV{VKPROF_LAYER_OUTPUT_DIR})
  unset(ENV{VK_INSTANCE_LAYERS})
elseif(CASE STREQUAL "accounting")
  # every dispatch accounted for: a full phase table (300 pipeline names),
  # a buffer begun and never submitted (no loss), the library's variables
  # ignored (VKPROF_RING_ROTATE would leave calls unstamped)
  set(ENV{VKPROF_RING_ROTATE} 2)
  set(ENV{VKPROF_TRACE_FORMAT} pftrace)
  foreach(mode dispatch cmdbuf)
    set(o ${WORK}/acct-${mode})
    # (every dispatch: --rotate 0; vkprof run's default is the window)
    set(every "")
    if(mode STREQUAL "dispatch")
      set(every --rotate 0)
    endif()
    timed_run(120 ${VKPROF} run -o ${o} --mode ${mode} ${every} --layer-dir ${LAYER_DIR} -- ${APP} --iterations 2 --dispatches 4 --pipelines 300 --abandon)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${mode}: exit ${rc}")
    endif()
    expect("${mode}" "${err}" "lost: none\n")
    expect("${mode}" "${err}" "scopes recorded into buffers that were never submitted")
    expect_not("${mode}" "${err}" "misuse")
    if(mode STREQUAL "dispatch")
      # 2 x (4 + 300) executed; the phase table holds 256 names, 15 of them
      # the library's defaults: the rest untimed, said why
      expect("${mode}" "${err}" ": 608 dispatches executed \\(608 recorded\\): [0-9]+ timed, [0-9]+ untimed: phase_table_full [0-9]+\n")
    endif()
    file(GLOB traces ${o}/*.trace.json)
    list(LENGTH traces nt)
    if(NOT nt EQUAL 1)
      message(FATAL_ERROR "${mode}: ${nt} JSON traces (VKPROF_TRACE_FORMAT must not reach the layer)")
    endif()
    # the app's host time recording (issue 26): one recording an iteration,
    # each ended; the buffer abandoned at teardown was never ended, so it is
    # not one
    file(GLOB sums ${o}/*.summary.json)
    file(READ ${sums} sj)
    string(JSON nrec GET "${sj}" devices 0 queue_families 0 recording command_buffers)
    string(JSON nsrec GET "${sj}" devices 0 queue_families 0 recording host_ns)
    if(NOT nrec EQUAL 2 OR NOT nsrec GREATER 0)
      message(FATAL_ERROR "${mode}: recording ${nrec} command buffers in ${nsrec} ns, not 2 in more than 0")
    endif()
    expect("${mode}" "${err}" ": the app's host time recording: [0-9.]+ ms over 2 command buffer\\(s\\), [0-9.]+ us each, [0-9.]+ ms per step")
  endforeach()
  unset(ENV{VKPROF_RING_ROTATE})
  unset(ENV{VKPROF_TRACE_FORMAT})
  # a store too small for the run: the report says the trace is truncated,
  # and where; --keep last keeps the recent window
  set(o ${WORK}/small)
  timed_run(120 ${VKPROF} run --rotate 0 -o ${o} --trace-events 1024 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 100 --dispatches 8)
  expect("small store" "${err}" "trace truncated: the store of 1024 events filled [0-9.]+ s in; [0-9]+ events after it are not in the trace")
  set(o ${WORK}/small-last)
  timed_run(120 ${VKPROF} run --rotate 0 -o ${o} --trace-events 1024 --keep last --layer-dir ${LAYER_DIR} -- ${APP} --iterations 100 --dispatches 8)
  expect("keep last" "${err}" "trace: the last 1024 events \\(--keep last\\); [0-9]+ earlier ones were overwritten")
  file(GLOB traces ${o}/*.trace.json)
  file(READ ${traces} tr)
  expect("keep last trace" "${tr}" "\"trace_keep\":\"last\"")
  # a name map from a device or a FIFO: refused at once, nothing started
  execute_process(COMMAND mkfifo ${WORK}/fifo)
  timed_run(20 ${VKPROF} run --rotate 0 -o ${WORK}/names --names ${WORK}/fifo --layer-dir ${LAYER_DIR} -- ${APP})
  expect("fifo names" "${err}" "not a regular file")
  timed_run(20 ${VKPROF} run --rotate 0 -o ${WORK}/names --names /dev/zero --layer-dir ${LAYER_DIR} -- ${APP})
  expect("/dev/zero names" "${err}" "not a regular file")
elseif(CASE STREQUAL "inflight")
  # issue 26: work in flight at the app's submits. Each iteration first
  # submits a buffer the GPU holds until the host sets an event, then its
  # own buffer, and only then sets the event. The layer used to read
  # results inside every submit; on lavapipe such a read waits for the GPU,
  # here for an event the app sets only after the submit returns: the app
  # hung, and its watchdog ends it with status 3. Now results are read after
  # the app's waits only. Validation on, in the app.
  set(o ${WORK}/gate)
  timed_run(120 ${VKPROF} run --rotate 0 -o ${o} --layer-dir ${LAYER_DIR} -- ${APP} --gate --vk12 --iterations 6 --dispatches 6 --validation)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gate: exit ${rc} (3: a submit waited for the GPU)")
  endif()
  # 6 x (6 + 1 held) dispatches, every one read
  expect("gate" "${err}" ": 42 dispatches executed \\(42 recorded\\): 42 timed\n")
  expect("gate" "${err}" "samples 42: collected 42, dropped 0, pending 0; lost: none\n")
  expect("gate" "${err}" "results read: [0-9]+ times after the app's waits, 0 at its submits\n")
  file(GLOB sums ${o}/*.summary.json)
  file(READ ${sums} sj)
  string(JSON after GET "${sj}" devices 0 collections after_waits)
  string(JSON at GET "${sj}" devices 0 collections at_submits)
  if(NOT at EQUAL 0 OR after LESS 6)
    message(FATAL_ERROR "gate: results read ${after} times after waits and ${at} at submits (want >= 6 and 0)")
  endif()
  # the trace's GPU busy counter (issue 26): one point per step between two
  # step events, every dispatch timed; none when only some are (--sample 2)
  file(GLOB tj ${o}/*.trace.json)
  file(READ ${tj} tr)
  string(REGEX MATCHALL "\"ph\":\"C\",\"cat\":\"busy\",\"name\":\"GPU busy, queue family 0, queue 0\"" cpts "${tr}")
  string(REGEX MATCHALL "\"cat\":\"step\"" spts "${tr}")
  list(LENGTH cpts nc)
  list(LENGTH spts nst)
  math(EXPR want_c "${nst} - 1")
  if(nst LESS 6 OR NOT nc EQUAL want_c)
    message(FATAL_ERROR "gate: ${nc} GPU busy points for ${nst} step events (want one fewer)")
  endif()
  # the host's time (issue 26): every submit and wait counted, in the
  # summary and in vkprof run's line per step
  string(JSON ns_sub GET "${sj}" devices 0 host submit calls)
  string(JSON ns_wait GET "${sj}" devices 0 host wait calls)
  string(JSON ns_col GET "${sj}" devices 0 host collect calls)
  string(JSON ns_spin GET "${sj}" devices 0 host spin calls)
  # 6 x (the held buffer, the iteration's own); 6 fence waits and the
  # device wait at its destroy; a collection after each
  if(NOT ns_sub EQUAL 12 OR NOT ns_wait EQUAL 7 OR NOT ns_col EQUAL after OR NOT ns_spin EQUAL 0)
    message(FATAL_ERROR "gate: host calls: ${ns_sub} submits, ${ns_wait} waits, ${ns_col} collections (${after} after waits), ${ns_spin} spins")
  endif()
  expect("gate" "${err}" "host time per step: recording [0-9.]+ ms, submitting [0-9.]+ ms, waiting [0-9.]+ ms, spinning on vkGetFenceStatus 0.000 ms; the layer's own [0-9.]+ ms \\(reading results [0-9.]+, at submits [0-9.]+\\)\n")
  # an app that spins on vkGetFenceStatus, as ggml does: its spin is timed
  set(o ${WORK}/spin)
  timed_run(60 ${VKPROF} run --rotate 0 -o ${o} --layer-dir ${LAYER_DIR} -- ${APP} --spin --iterations 5 --dispatches 40 --validation)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spin: exit ${rc}")
  endif()
  file(GLOB sums ${o}/*.summary.json)
  file(READ ${sums} sj)
  string(JSON ns_spin GET "${sj}" devices 0 host spin calls)
  string(JSON t_spin GET "${sj}" devices 0 host spin ns)
  string(JSON ns_wait GET "${sj}" devices 0 host wait calls)
  # (a spin is counted from the first poll that finds the fence unsignalled:
  # a GPU done before the app's first poll leaves none to count)
  if(ns_spin LESS 1 OR ns_spin GREATER 5 OR t_spin LESS 1 OR NOT ns_wait EQUAL 1)
    message(FATAL_ERROR "spin: ${ns_spin} spins (${t_spin} ns), ${ns_wait} waits (want 1 to 5 spins, more than 0 ns, and the device wait)")
  endif()
  timed_run(60 ${VKPROF} run -o ${WORK}/sampled --sample 2 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 6 --dispatches 6)
  file(GLOB tj ${WORK}/sampled/*.trace.json)
  file(READ ${tj} tr)
  expect_not("--sample 2 trace" "${tr}" "\"ph\":\"C\"")
  # an app whose completions the layer never sees: no fence, no wait call;
  # it polls a timeline semaphore's counter. Its submits then read, once
  # nothing was read for 1 s (8 iterations 300 ms apart), and say so.
  set(o ${WORK}/poll)
  timed_run(120 ${VKPROF} run --rotate 0 -o ${o} --layer-dir ${LAYER_DIR} -- ${APP} --poll --iterations 8 --dispatches 6 --sleep-ms 300 --validation)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "poll: exit ${rc}")
  endif()
  expect("poll" "${err}" "samples 48: collected 48, dropped 0, pending 0; lost: none\n")
  expect("poll" "${err}" "results read: [0-9]+ times after the app's waits, [1-9][0-9]* at its submits \\(nothing had been read for 1 s")
elseif(CASE STREQUAL "names")
  # names without a map (issue 25): pipelines with no debug name and no
  # --names are named after the data object that holds their SPIR-V in a
  # file the process has loaded: by address (the object itself) or by
  # content (a copy), in the executable or in a dlopen'ed library; off with
  # VKPROF_LAYER_AUTO_NAMES=0. The app's two pipelines share the busy module.
  # A stripped copy of the app has no symbol of its own.
  execute_process(COMMAND ${STRIP} -o ${WORK}/stripped_app ${APP} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "strip failed")
  endif()
  set(ENV{VK_INSTANCE_LAYERS} ${VAL})
  set(n 0)
  # app | its code | the name | how many by address, by content
  foreach(run "${APP}|default|busy|1 0" "${APP}|copy|busy|0 1"
              "${WORK}/stripped_app|copy|pipeline-|0 0"
              "${WORK}/stripped_app|lib:${FIXTURE}|busy|1 0"
              "${WORK}/stripped_app|libcopy:${FIXTURE}|busy|0 1" "${APP}|off|pipeline-|off")
    string(REPLACE "|" ";" run "${run}")
    list(GET run 0 app)
    list(GET run 1 shader)
    list(GET run 2 want)
    list(GET run 3 how)
    math(EXPR n "${n} + 1")
    set(args --no-names --validation --iterations 2 --dispatches 6)
    if(shader STREQUAL "off")
      set(ENV{VKPROF_LAYER_AUTO_NAMES} 0)
    elseif(NOT shader STREQUAL "default")
      list(APPEND args --shader ${shader})
    endif()
    timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/n${n} --layer-dir ${LAYER_DIR} -- ${app} ${args})
    unset(ENV{VKPROF_LAYER_AUTO_NAMES})
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${app} --shader ${shader}: exit ${rc}")
    endif()
    # 2 iterations of 6 dispatches, all of one module
    if(want STREQUAL "busy")
      expect("${shader}" "${err}" "\n +busy +12 ")
      expect_not("${shader}" "${err}" "pipeline-[0-9a-f]+ ")
    else()
      expect("${shader}" "${err}" "\n +pipeline-[0-9a-f]+ +12 ")
      expect_not("${shader}" "${err}" "\n +busy ")
    endif()
    if(how STREQUAL "off")
      expect("${shader}" "${err}" "\n  shader modules: 1 \\(names from loaded files off\\)\n")
    else()
      string(REPLACE " " ";" how "${how}")
      list(GET how 0 by_addr)
      list(GET how 1 by_content)
      expect("${shader}" "${err}" "\n  shader modules: 1, named from the loaded files' symbols: ${by_addr} by address, ${by_content} by content\n")
    endif()
    expect("${shader}" "${err}" "lost: none")
    expect_not("${shader}" "${out}${err}" "VUID-|Validation Error")
  endforeach()
  # the name map wins over the name found
  file(WRITE ${WORK}/names.map "")
  execute_process(COMMAND ${VKPROF} names -o ${WORK}/names.map ${APP} RESULT_VARIABLE rc)
  file(READ ${WORK}/names.map map)
  string(REGEX REPLACE " busy" " from_the_map" map "${map}")
  file(WRITE ${WORK}/names.map "${map}")
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/map --names ${WORK}/names.map --layer-dir ${LAYER_DIR} --
            ${APP} --no-names --iterations 2 --dispatches 6)
  expect("map" "${err}" "\n +from_the_map +12 ")
  # flows (issue 25): every GPU slice of the layer's trace links to the
  # vkQueueSubmit span that carried it (the .pftrace comes from the same
  # export walk: test_pftrace's check_identical)
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/flows --format both --layer-dir ${LAYER_DIR} --
            ${APP} --iterations 3 --dispatches 6)
  file(GLOB ftrace ${WORK}/flows/*.trace.json)
  file(READ ${ftrace} tr)
  string(REGEX MATCHALL "\"cat\":\"gpu\"" gpu "${tr}")
  string(REGEX MATCHALL "\"ph\":\"s\"" starts "${tr}")
  string(REGEX MATCHALL "\"ph\":\"f\"" ends "${tr}")
  list(LENGTH gpu ngpu)
  list(LENGTH starts ns)
  list(LENGTH ends nf)
  if(NOT ngpu EQUAL 18 OR NOT ns EQUAL 18 OR NOT nf EQUAL 18)
    message(FATAL_ERROR "flows: ${ngpu} GPU slices, ${ns} flow starts, ${nf} flow ends (want 18 each)")
  endif()
  expect("flows" "${tr}" "\"flows\":18")
  # issue 26: the layer's reading of results is its own span ("vkprof layer:
  # collect"), never inside the span of the app's call (it was inside
  # vkWaitForFences and made up all of vkGetFenceStatus)
  if(PYTHON)
    execute_process(COMMAND ${PYTHON} -c "
import json, sys
REC = 'vkBeginCommandBuffer..vkEndCommandBuffer'
t = json.load(open(sys.argv[1]))
ev = [e for e in t['traceEvents'] if e.get('ph') == 'X' and e.get('cat') == 'host']
col = [e for e in ev if e['name'].startswith('vkprof layer: ')]
app = [e for e in ev if not e['name'].startswith('vkprof layer: ') and e['name'] != REC]
def inside(c, a):
    s, e = float(a['ts']), float(a['ts']) + float(a['dur'])
    return a['pid'] == c['pid'] and a['tid'] == c['tid'] and s <= float(c['ts']) and float(c['ts']) + float(c['dur']) <= e and float(a['dur']) > 0
bad = [(c['ts'], a['name']) for c in col for a in app if inside(c, a)]
names = set(c['name'] for c in col)
print(len(col), 'layer spans', sorted(names), len(app), 'app spans', len(bad), 'inside an app span', bad[:3])
sys.exit(0 if names == {'vkprof layer: collect', 'vkprof layer: submit'} and not bad else 1)
" ${ftrace} RESULT_VARIABLE rc OUTPUT_VARIABLE said)
    message(STATUS "collect spans: ${said}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "the layer's collection is billed to an app span: ${said}")
    endif()
  endif()
  # issue 26: the app's host time recording is in the trace, a span per
  # command buffer (vkBeginCommandBuffer to vkEndCommandBuffer, off the span
  # stack), nested with the thread's other spans: disjoint from each other,
  # each other span inside one or apart from it; vkprof report gives it per
  # step beside submitting and waiting
  set(rec_check "
import json, sys
REC = 'vkBeginCommandBuffer..vkEndCommandBuffer'
t = json.load(open(sys.argv[1]))
ev = [e for e in t['traceEvents'] if e.get('ph') == 'X' and e.get('cat') == 'host']
rec = [e for e in ev if e['name'] == REC]
oth = [e for e in ev if e['name'] != REC]
def iv(e):
    return (e['pid'], e['tid']), float(e['ts']), float(e['ts']) + float(e['dur'])
def overlap_bad(a, b):
    (ka, sa, ea), (kb, sb, eb) = iv(a), iv(b)
    if ka != kb or ea <= sb or eb <= sa:
        return False
    return not (sa <= sb and eb <= ea) and not (sb <= sa and ea <= eb)
bad = [(a['ts'], b['name']) for a in rec for b in rec + oth if a is not b and (overlap_bad(a, b) or (b['name'] == REC and iv(a)[0] == iv(b)[0] and max(iv(a)[1], iv(b)[1]) < min(iv(a)[2], iv(b)[2])))]
print(len(rec), 'recording spans,', len(bad), 'not nested', bad[:3])
sys.exit(0 if len(rec) == int(sys.argv[2]) and not bad else 1)
")
  if(PYTHON)
    execute_process(COMMAND ${PYTHON} -c "${rec_check}" ${ftrace} 3 RESULT_VARIABLE rc OUTPUT_VARIABLE said)
    message(STATUS "recording spans: ${said}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "recording spans: not one per command buffer, or not nested: ${said}")
    endif()
  endif()
  # recordings as runtimes make them: two at once on a thread (the first
  # holds the second's begin: only the second is a span), one ended on
  # another thread (none): 3 + 1 spans, still nested, validation silent
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/interleave --layer-dir ${LAYER_DIR} --
            ${APP} --iterations 3 --dispatches 6 --interleave --validation)
  expect_not("interleaved recordings" "${out}${err}" "VUID-|Validation Error")
  expect("interleaved recordings" "${err}" ": 21 dispatches executed \\(21 recorded\\): 21 timed\n")
  file(GLOB itrace ${WORK}/interleave/*.trace.json)
  if(PYTHON)
    execute_process(COMMAND ${PYTHON} -c "${rec_check}" ${itrace} 4 RESULT_VARIABLE rc OUTPUT_VARIABLE said)
    message(STATUS "interleaved recording spans: ${said}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "interleaved recording spans: not 4, or not nested: ${said}")
    endif()
  endif()
  timed_run(60 ${VKPROF} report ${ftrace})
  expect("report of the recordings" "${out}" "\n  vkBeginCommandBuffer..vkEndCommandBuffer +[0-9.]+ +[0-9.]+ +[0-9.]+% +1.00 ")
  expect("report of the recordings" "${out}" "\nhost time per step, in the app's calls \\(self times\\): recording [0-9.]+ ms \\(the recordings' spans\\), submitting [0-9.]+ ms, waiting [0-9.]+ ms; the layer's own [0-9.]+ ms\n")
  file(GLOB fpf ${WORK}/flows/*.trace.pftrace)
  if(fpf STREQUAL "")
    message(FATAL_ERROR "flows: no .pftrace written")
  endif()
  # --sample 4 on an app that submits twice per iteration, alpha's
  # dispatches then beta's (issue 26): with `submits % 4 == 0` beta's
  # submits were never timed; the layer's mixed choice times both
  timed_run(60 ${VKPROF} run -o ${WORK}/sampled --sample 4 --layer-dir ${LAYER_DIR} --
            ${APP} --split --iterations 16 --dispatches 6)
  # each phase's calls are all 48 that ran (16 x 3; 32 steps, 2 waits an
  # iteration), sampled or not: the layer counts the calls of the
  # recordings it leaves out, so the estimate is each phase's mean times its
  # calls, in vkprof run and in the trace (vkprof report read ~1/N of each
  # phase's time from the trace before)
  expect("sampled" "${err}" "\n +alpha +[1-9][0-9]* +48 ")
  expect("sampled" "${err}" "\n +beta +[1-9][0-9]* +48 ")
  expect("sampled" "${err}" "GPU [0-9.]+ ms per step over 32 steps \\(~: submits sampled, each phase's mean times its calls: an estimate\\)")
  expect("sampled" "${err}" "lost: none")
  string(REGEX MATCH "GPU ([0-9.]+) ms per step over 32 steps" _ "${err}")
  set(run_ms "${CMAKE_MATCH_1}")
  file(GLOB str ${WORK}/sampled/*.trace.json)
  timed_run(60 ${VKPROF} report ${str})
  expect("report of --sample 4" "${out}" "GPU phases, estimated: the slices above are a sample \\([0-9]+ of 96 calls timed, the others left out before the library: a layer's --sample or cost probe\\)")
  string(REGEX MATCH "\n  total +[0-9.]+ +([0-9.]+) +100.0% +3.00 " _ "${out}")
  if(NOT CMAKE_MATCH_1 STREQUAL run_ms)
    message(FATAL_ERROR "report of --sample 4: the estimate is '${CMAKE_MATCH_1}' ms a step, vkprof run said ${run_ms}")
  endif()
  # --mode label with labels nested three deep, as newer ggml builds open
  # them (graph > node > disp; issue 26): each label's own time, never a
  # region and its children summed (all three levels were: 3x the busy time)
  timed_run(60 ${VKPROF} run -o ${WORK}/nested --mode label --layer-dir ${LAYER_DIR} --
            ${APP} --nested-labels --validation --iterations 3 --dispatches 6)
  expect("nested labels" "${err}" "\n +disp +18 ")
  expect_not("nested labels" "${err}" "\n +(graph|node) +[0-9]+ +[0-9]")
  expect("nested labels" "${err}" "lost: none")
  # each region's total, its own time and its nested regions' (issue 26: a
  # tree, not a sum): graph holds node holds disp, and with --pipelines 2
  # graph has dispatches of its own outside every node. From the parents
  # the layer tells the library (vkprof_set_phase_parent).
  timed_run(60 ${VKPROF} run -o ${WORK}/nested-tree --mode label --layer-dir ${LAYER_DIR} --
            ${APP} --nested-labels --pipelines 2 --validation --iterations 3 --dispatches 6)
  expect_not("region totals" "${out}${err}" "VUID-|Validation Error")
  set(num "([0-9]+\\.[0-9]+)")
  string(REGEX MATCH "\n +total +${num} +100\\.0 " _ "${err}")
  set(table_total "${CMAKE_MATCH_1}")
  string(REGEX MATCH "\n +graph +[0-9]+ +${num} " _ "${err}")
  set(graph_self "${CMAKE_MATCH_1}")
  string(REGEX MATCH "\n +disp +18 +${num} " _ "${err}")
  set(disp_self "${CMAKE_MATCH_1}")
  string(REGEX MATCH "each region's total, its own time and its nested regions':\n +region +total ms +own ms +share % +per step us\n      graph +${num} +${num} +100\\.0 +[0-9.]+\n        node +${num} +0\\.000 +[0-9.]+ +[0-9.]+\n          disp +${num} +${num} " tree "${err}")
  if(tree STREQUAL "" OR table_total STREQUAL "" OR graph_self STREQUAL "" OR disp_self STREQUAL "")
    message(FATAL_ERROR "region totals: no tree graph > node > disp\n${err}")
  endif()
  # graph's total is the table's total; its own time is its row's; node's
  # total and disp's are disp's own time (to the printed 0.001 ms)
  foreach(pair "${CMAKE_MATCH_1}=${table_total}" "${CMAKE_MATCH_2}=${graph_self}"
               "${CMAKE_MATCH_3}=${disp_self}" "${CMAKE_MATCH_4}=${disp_self}" "${CMAKE_MATCH_5}=${disp_self}")
    string(REPLACE "=" ";" ab "${pair}")
    list(GET ab 0 a)
    list(GET ab 1 b)
    if(NOT a STREQUAL b)
      message(FATAL_ERROR "region totals: ${a} where ${b} was expected\n${err}")
    endif()
  endforeach()
  # a phase that ran only in recordings the sampling left out has calls
  # and no timed one: named, never a silent 0 (1 window in 1000000: window
  # 0, alpha's submit, is the only one timed; beta's never)
  timed_run(60 ${VKPROF} run -o ${WORK}/sampled-once --sample 1000000 --layer-dir ${LAYER_DIR} --
            ${APP} --split --iterations 4 --dispatches 6)
  expect("beta never sampled" "${err}" "\n +alpha +3 +12 ")
  expect("beta never sampled" "${err}" "\n      not timed yet \\(none of their calls was timed: run more steps; no estimate\\): beta \\(12 calls\\)\n")
  # --mode label --busy on (issue 26): each buffer is an outer scope around
  # its label regions, so each region's own time is a share of the queue's
  # busy time, and what lies in no label is said; the trace measures busy
  # and idle. Validation silent with the regions nested in the buffer's.
  timed_run(60 ${VKPROF} run -o ${WORK}/nested-busy --mode label --busy on --layer-dir ${LAYER_DIR} --
            ${APP} --nested-labels --validation --iterations 3 --dispatches 6)
  expect_not("label busy" "${out}${err}" "VUID-|Validation Error")
  expect("label busy" "${err}" "phase +count +total ms +% busy +per step us\n +disp +18 +[0-9.]+ +([0-9.]+) ")
  string(REGEX MATCH "\n +disp +18 +[0-9.]+ +([0-9.]+) " _ "${err}")
  set(disp_share "${CMAKE_MATCH_1}")
  expect("label busy" "${err}" "\n +in no label: [0-9.]+ ms per step, ([0-9.]+)% of the busy time")
  string(REGEX MATCH "in no label: [0-9.]+ ms per step, ([0-9.]+)% of the busy time" _ "${err}")
  expect("label busy" "${err}" "GPU busy [0-9.]+ ms per step: its command buffers' time, each one stamped in every step \\(3 buffers, exact\\); the label regions' own time is ${disp_share}% of it\n")
  expect("label busy" "${err}" "lost: none")
  file(GLOB lbt ${WORK}/nested-busy/*.trace.json)
  # the buffers' scopes hold the regions: each disp slice lies within a
  # command_buffer slice on its queue's track, one buffer a step
  if(PYTHON)
    execute_process(COMMAND ${PYTHON} -c "
import json, sys
t = json.load(open(sys.argv[1]))
g = [e for e in t['traceEvents'] if e.get('cat') == 'gpu' and e.get('ph') == 'X']
cb = [e for e in g if e['name'] == 'command_buffer']
dp = [e for e in g if e['name'] == 'disp']
def within(d):
    return any(c['tid'] == d['tid'] and c['ts'] - 0.001 <= d['ts'] and d['ts'] + d['dur'] <= c['ts'] + c['dur'] + 0.001 for c in cb)
out = [d['ts'] for d in dp if not within(d)]
print(len(cb), 'buffers,', len(dp), 'regions,', len(out), 'outside a buffer')
sys.exit(0 if len(cb) == 3 and len(dp) == 18 and not out else 1)
" ${lbt} RESULT_VARIABLE rc OUTPUT_VARIABLE said)
    message(STATUS "label busy: ${said}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "label busy: the buffers' scopes do not hold the regions: ${said}")
    endif()
  endif()
  timed_run(60 ${VKPROF} report ${lbt})
  expect("report of label busy" "${out}" "GPU busy and idle per step \\(each queue's timed GPU work")
  timed_run(20 ${VKPROF} run -o ${WORK}/rotbad --mode cmdbuf --busy on --layer-dir ${LAYER_DIR} -- ${APP})
  expect("--busy with cmdbuf" "${err}" "--busy goes with --rotate K \\(K > 0\\) or --mode label")
  # sampled, label and cmdbuf modes count the calls a timed recording would
  # make in those it leaves out: each label segment (disp: 6 a step), each
  # buffer (1 a step), so the estimates cover all 16 steps
  timed_run(60 ${VKPROF} run -o ${WORK}/nested-sampled --mode label --sample 4 --layer-dir ${LAYER_DIR} --
            ${APP} --nested-labels --iterations 16 --dispatches 6)
  expect("sampled nested labels" "${err}" "\n +disp +[1-9][0-9]* +96 ")
  expect_not("sampled nested labels" "${err}" "\n +(graph|node) +[0-9]+ +[0-9]")
  timed_run(60 ${VKPROF} run -o ${WORK}/cmdbuf-sampled --mode cmdbuf --sample 4 --layer-dir ${LAYER_DIR} --
            ${APP} --iterations 16 --dispatches 6)
  expect("sampled cmdbuf" "${err}" "\n +command_buffer +[1-9][0-9]* +16 ")
  expect_not("nested labels" "${out}${err}" "VUID-|Validation Error")
  # --mode label on an app that opens only queue labels (ggml's debug
  # markers): nothing is timed, and the report says why
  timed_run(60 ${VKPROF} run -o ${WORK}/qlabels --mode label --layer-dir ${LAYER_DIR} --
            ${APP} --queue-labels --iterations 2 --dispatches 6)
  expect("queue labels only" "${err}" "no GPU work timed: --mode label times command-buffer label regions, and none was opened \\(2 queue labels were: they mark no GPU work of their own\\); try --mode dispatch")
  # a debug name wins over both
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/debug --names ${WORK}/names.map --layer-dir ${LAYER_DIR} --
            ${APP} --iterations 2 --dispatches 6)
  expect("debug names" "${err}" "\n +alpha +6 ")
  unset(ENV{VK_INSTANCE_LAYERS})
elseif(CASE STREQUAL "rotate")
  # --rotate K (issue 26): each step stamps K dispatches (+1 boundary), the
  # next step the next K; every dispatch is accounted for (timed, or
  # not_in_window), every position is covered once a pass, each phase's
  # first dispatch is stamped apart (lavapipe's first dispatch takes ~5 ms,
  # 30x the others: scaled by the period it made alpha 81% instead of 61%),
  # and the estimated split is near the every-dispatch one. 8 dispatches a
  # step (alpha, beta x3, p0, p1), K = 2: P = 4, 96 steps = 24 passes. A
  # CPU device's single samples jump by milliseconds when a worker thread is
  # preempted, and a sample stands for P calls: the split is checked to
  # 15 pp here (the H200's figures are in docs/performance.md).
  set(args --iterations 96 --dispatches 6 --pipelines 2)
  if(NOT PYTHON)
    message(FATAL_ERROR "rotate: no python to check the summaries")
  endif()
  # The accounting is exact and must hold at the first try. The split is
  # timing: on a CPU device shared with other tests, a burst of load on one
  # run moved alpha's share by 16 pp once in CI (35.1 % against 50.9 %).
  # So the pair of runs is repeated, up to 3 times, only while the shares
  # alone are off; a split that is wrong every time still fails.
  foreach(attempt 1 2 3)
    file(REMOVE_RECURSE ${WORK}/every ${WORK}/rot)
    timed_run(120 ${VKPROF} run --rotate 0 -o ${WORK}/every --layer-dir ${LAYER_DIR} -- ${APP} ${args})
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "every dispatch: exit ${rc}")
    endif()
    # (--busy on: the buffers' scopes in every step, for exact counts; the
    # default's 1 step in 4 is checked below, --busy 4)
    timed_run(120 ${VKPROF} run -o ${WORK}/rot --rotate 2 --busy on --layer-dir ${LAYER_DIR} -- ${APP} ${args} --validation)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "--rotate 2: exit ${rc}")
    endif()
    set(rot_rc "${rc}")
    set(rot_out "${out}")
    set(rot_err "${err}")
    file(GLOB every ${WORK}/every/*.summary.json)
    file(GLOB rot ${WORK}/rot/*.summary.json)
    execute_process(COMMAND ${PYTHON} -c "
import json, sys
def ctx(path):
    s = json.load(open(path))
    d = s['devices'][0]
    return s, d['queue_families'][0], d['contexts'][0]['snapshot']
se, fe, ne = ctx(sys.argv[1])
sr, fr, nr = ctx(sys.argv[2])
bad = []
shares = []
def want(what, ok):
    if not ok:
        bad.append(what)
want('rotate key', sr['rotate'] == 2 and se['rotate'] == 0)
dd = fr['dispatches']
want('executed = timed + untimed', dd['executed'] == dd['executed_timed'] + sum(dd['executed_untimed'].values()))
want('only not_in_window', dd['executed_untimed']['not_in_window'] == dd['executed'] - dd['executed_timed'])
t = nr['timing']
# the command buffers' outer scopes: one a step, every one stamped, exact
ob = [p for p in nr['phases'] if p.get('outer')]
want('one outer phase', len(ob) == 1 and ob[0]['name'] == 'command_buffer')
o = ob[0] if ob else {'count': 0, 'calls': 0, 'total_ns': 0, 'est_total_ns': -1}
want('outer every step', o['count'] == o['calls'] == 96 and o['est_total_ns'] == o['total_ns'] > 0)
want('no outer phase in every dispatch', not any(p.get('outer') for p in ne['phases']))
want('samples = timed dispatches + buffers', t['samples'] == dd['executed_timed'] + 96 == t['scopes_collected'])
want('calls', t['calls_executed'] == dd['executed'] + 96 and t['calls_unstamped'] == dd['executed_untimed']['not_in_window'])
r = t['rotation']
want('rotation', (r['cycles'], r['period_steps'], r['calls_per_step'], r['changed_steps']) == (24, 4, 8, 0))
want('first calls flag', t.get('rotate_first_calls') is True)
pe = {p['name']: p for p in ne['phases'] if p['count'] > 0}
pr = {p['name']: p for p in nr['phases'] if p['calls'] > 0 and not p.get('outer')}
want('the same phases', sorted(pe) == sorted(pr) == ['alpha', 'beta', 'p0', 'p1'])
# positions: alpha 0 2 4, beta 1 3 5, p0 6, p1 7; step 1's window is [0, 2):
# p0's and p1's first calls are stamped apart
want_count = {'alpha': 72, 'beta': 72, 'p0': 25, 'p1': 25}
for n, p in pr.items():
    want(n + ' calls', p['calls'] == pe[n]['calls'] == pe[n]['count'])
    want(n + ' count', p['count'] == want_count.get(n))
    want(n + ' first', p.get('first_calls') == 1 and 0 < p['first_ns'] <= p['total_ns'])
    f, c = p['first_ns'], p['first_calls']
    est = f + (p['total_ns'] - f) * (p['calls'] - c) // (p['count'] - c)
    want(n + ' estimate', abs(p['est_total_ns'] - est) <= 1)
    want(n + ' every-dispatch has no first calls', 'first_calls' not in pe[n])
te = sum(p['total_ns'] for p in pe.values())
tr = sum(p['est_total_ns'] for p in pr.values())
for n in pr:
    a, b = 100.0 * pe[n]['total_ns'] / te, 100.0 * pr[n]['est_total_ns'] / tr
    print('%-6s every %5.1f%%  rotate %5.1f%%' % (n, a, b))
    if abs(a - b) > 15.0:
        shares.append(n + ' share within 15 pp')
print('rotated GPU total / every-dispatch total: %.3f' % (tr / te))
# a buffer holds its stamped dispatches: the stamped ones' time is within it
want('busy holds the timed dispatches', o['total_ns'] >= sum(p['total_ns'] for p in pr.values()))
print('busy (command buffers) / rotated estimate: %.3f' % (o['total_ns'] / tr))
print('bad:', bad, 'shares off:', shares)
sys.exit(1 if bad else 3 if shares else 0)
" ${every} ${rot} RESULT_VARIABLE src OUTPUT_VARIABLE said ERROR_VARIABLE said_err)
    message(STATUS "rotate vs every dispatch, try ${attempt}:\n${said}${said_err}")
    if(src EQUAL 0)
      break()
    elseif(NOT src EQUAL 3)
      message(FATAL_ERROR "rotate: the summary's accounting is off")
    elseif(attempt EQUAL 3)
      message(FATAL_ERROR "rotate: the split is off in 3 tries out of 3")
    endif()
  endforeach()
  # issue 26: the report does not call the untimed dispatches idle time (it
  # read 98.6 % idle on llama.cpp with --rotate 4); the every-dispatch run's
  # report measures it (the run's own output is checked below: kept)
  # vkprof run's default (issue 26): the window of 2 with the busy scopes;
  # every dispatch only when asked (--rotate 0, above), or where the
  # window cannot move (VKPROF_LAYER_STEPS=none)
  timed_run(120 ${VKPROF} run -o ${WORK}/default --layer-dir ${LAYER_DIR} -- ${APP} --iterations 8 --dispatches 6 --pipelines 2)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the default mode: exit ${rc}")
  endif()
  # (K = 2, busy 8: of 8 steps only the second is a busy step, the hash's
  # first pick being step 17)
  expect("default" "${err}" "rotating window: 2 dispatches timed a step \\(\\+1 boundary stamp\\)")
  expect("default" "${err}" "GPU busy [0-9.]+ ms per step: its command buffers' time, each one stamped in 1 step in 8, at random \\(1 of 8 buffers timed, the rest estimated: 7 left out by the window's steps\\)")
  expect_not("default" "${err}" "every dispatch stamped")
  set(ENV{VKPROF_LAYER_STEPS} "none")
  timed_run(120 ${VKPROF} run -o ${WORK}/default-nosteps --layer-dir ${LAYER_DIR} -- ${APP} --iterations 2 --dispatches 6)
  unset(ENV{VKPROF_LAYER_STEPS})
  expect_not("no steps" "${err}" "rotating window|VKPROF_LAYER_ROTATE")
  expect("no steps" "${err}" "every dispatch stamped \\(--rotate 0\\): each one runs alone, the GPU serialised")
  expect("no steps" "${err}" ": 12 dispatches executed \\(12 recorded\\): 12 timed\n")
  # the window's busy scopes (--busy, on by default; issue 26): each
  # command buffer stamped in every step gives busy and idle per step
  file(GLOB rtr ${WORK}/rot/*.trace.json)
  timed_run(60 ${VKPROF} report ${rtr})
  expect("report of --rotate 2" "${out}" "GPU busy and idle per step \\(each queue's timed GPU work")
  expect("report of --rotate 2" "${out}" "\\(from the outer scopes around all of a step's work, over the steps that hold them: command_buffer;")
  # --busy off: the window alone, and busy/idle is not measured
  timed_run(120 ${VKPROF} run -o ${WORK}/rotnb --rotate 2 --busy off --layer-dir ${LAYER_DIR} -- ${APP} --iterations 8 --dispatches 6 --pipelines 2)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--rotate 2 --busy off: exit ${rc}")
  endif()
  expect_not("--busy off" "${err}" "GPU busy ")
  expect("--busy off" "${err}" "this mode adds a few stamps a step \\(the window\\), each waiting")
  expect("--busy off" "${err}" "rotating: 2 dispatches stamped a step of 8, every position once in 4 steps; 2 passes completed; 18 of 64 calls stamped\n")
  file(GLOB nbtr ${WORK}/rotnb/*.trace.json)
  timed_run(60 ${VKPROF} report ${nbtr})
  expect("report of --rotate 2 --busy off" "${out}" "GPU busy and idle per step: not measured \\(only part of each step's GPU work was timed")
  timed_run(20 ${VKPROF} run -o ${WORK}/rotbad --rotate 2 --busy maybe --layer-dir ${LAYER_DIR} -- ${APP})
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "--busy maybe was not refused: exit ${rc}")
  endif()
  expect("--busy maybe" "${err}" "unknown --busy 'maybe' \\(on\\|off\\|N, N 1..1000000\\)")
  timed_run(20 ${VKPROF} run -o ${WORK}/rotbad --rotate 0 --busy on --layer-dir ${LAYER_DIR} -- ${APP})
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "--busy with every dispatch was not refused: exit ${rc}")
  endif()
  expect("--busy, every dispatch" "${err}" "--busy goes with --rotate K \\(K > 0\\)")
  timed_run(20 ${VKPROF} run -o ${WORK}/rotbad --mode cmdbuf --busy off --layer-dir ${LAYER_DIR} -- ${APP})
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "--busy with --mode cmdbuf was not refused: exit ${rc}")
  endif()
  # --busy 4 (issue 26: each stamp a step costs): the busy scopes in 1 step
  # in 4, chosen by a hash of the step's number (never by a period, which
  # aliases with an app's alternating steps), each a step of its own with
  # no window in it; the other steps stamp the window and count the
  # buffers' scopes as left out. Exact accounting: the steps chosen, the
  # buffers stamped, the dispatches counted, the trace's busy points.
  timed_run(120 ${VKPROF} run -o ${WORK}/rotb4 --rotate 2 --busy 4 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 40 --dispatches 6 --pipelines 2 --validation)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--rotate 2 --busy 4: exit ${rc}")
  endif()
  expect_not("--busy 4" "${out}${err}" "VUID-|Validation Error")
  expect("--busy 4" "${err}" "busy scopes: each command buffer stamped in 1 step in 4, chosen at random, a step of its own")
  expect("--busy 4" "${err}" "GPU busy [0-9.]+ ms per step: its command buffers' time, each one stamped in 1 step in 4, at random \\(([0-9]+) of 40 buffers timed, the rest estimated: ([0-9]+) left out by the window's steps\\)")
  expect("--busy 4" "${err}" "lost: none")
  file(GLOB b4s ${WORK}/rotb4/*.summary.json)
  file(GLOB b4t ${WORK}/rotb4/*.trace.json)
  execute_process(COMMAND ${PYTHON} -c "
import json, sys
s = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
d = s['devices'][0]
f, n = d['queue_families'][0], d['contexts'][0]['snapshot']
bad = []
def want(what, ok):
    if not ok:
        bad.append(what)
M = (1 << 64) - 1
def mix(x):
    z = (x + 0x9e3779b97f4a7c15) & M
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
# one buffer of 8 dispatches a step (40 steps): the second step and the steps the hash picks, never the first
busy = [k for k in range(40) if k == 1 or (k > 0 and mix(k ^ 0x62757379) % 4 == 0)]
want('busy_every key', s.get('busy_every') == 4 and s['rotate'] == 2)
want('some steps, not all', 0 < len(busy) < 39)
o = [p for p in n['phases'] if p.get('outer')]
o = o[0] if len(o) == 1 else {'count': -1, 'calls': -1, 'total_ns': 0, 'est_total_ns': -1}
want('buffers stamped: the chosen steps', o['count'] == len(busy) and o['calls'] == 40)
want('the rest left out, counted', f['recording']['scopes_left_out'] == 40 - len(busy))
want('busy estimate: its mean times its calls', abs(o['est_total_ns'] - o['total_ns'] * 40 // max(o['count'], 1)) <= 1)
dd = f['dispatches']
want('dispatches', dd['executed'] == 320 and dd['executed_untimed']['not_in_window'] == 320 - dd['executed_timed'])
# the window runs in the other steps only: 2 a step, and the calls just
# before its start whose end is its first boundary are not timed
want('window stamps only in the window steps', dd['executed_timed'] <= 2 * (40 - len(busy)) + 2)
t_ = n['timing']
want('calls', t_['calls_executed'] == 320 + 40 and t_['calls_unstamped'] == 320 - dd['executed_timed'] + 40 - len(busy))
# the trace: a step with a buffer's scope holds no dispatch's
sl = [e for e in t['traceEvents'] if e.get('ph') == 'X' and e.get('cat') == 'gpu']
outer_steps = {e['args']['step'] for e in sl if e['name'] == 'command_buffer'}
disp_steps = {e['args']['step'] for e in sl if e['name'] != 'command_buffer'}
want('busy steps in the trace', len(outer_steps) == len(busy))
want('no window in a busy step', not (outer_steps & disp_steps))
pts = [e for e in t['traceEvents'] if e.get('ph') == 'C' and e.get('cat') == 'busy']
want('a busy point for each busy step (the last may have no step after it)', len(busy) - 1 <= len(pts) <= len(busy))
want('busy shares', all(0 < e['args']['%'] <= 100 for e in pts))
print('busy steps %s; timed dispatches %d; busy points %d' % (busy, dd['executed_timed'], len(pts)))
print('bad:', bad)
sys.exit(1 if bad else 0)
" ${b4s} ${b4t} RESULT_VARIABLE src OUTPUT_VARIABLE said ERROR_VARIABLE said_err)
  message(STATUS "--busy 4:\n${said}${said_err}")
  if(NOT src EQUAL 0)
    message(FATAL_ERROR "--busy 4: the accounting is off")
  endif()
  timed_run(60 ${VKPROF} report ${b4t})
  string(REGEX MATCH "busy steps \\[([0-9, ]*)\\]" _ "${said}")
  string(REGEX MATCHALL "[0-9]+" bsteps "${CMAKE_MATCH_1}")
  list(LENGTH bsteps nb)
  math(EXPR nb1 "${nb} - 1")
  expect("report of --busy 4" "${out}" "GPU busy and idle per step \\(each queue's timed GPU work")
  # busy and idle over the busy steps alone: the window's steps are left out
  if(NOT out MATCHES "over (${nb}|${nb1}) step\\(s\\) with timed GPU work")
    message(FATAL_ERROR "report of --busy 4: not over the ${nb} busy steps:\n${out}")
  endif()
  timed_run(20 ${VKPROF} run -o ${WORK}/rotbad --mode label --busy 4 --layer-dir ${LAYER_DIR} -- ${APP})
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "--busy 4 with --mode label was not refused: exit ${rc}")
  endif()
  timed_run(20 ${VKPROF} run -o ${WORK}/rotbad --busy 0 --layer-dir ${LAYER_DIR} -- ${APP})
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "--busy 0 was not refused: exit ${rc}")
  endif()
  # a garbage value: warned, and the busy scopes in every step
  set(ENV{VKPROF_LAYER_BUSY_EVERY} "4x")
  timed_run(120 ${VKPROF} run -o ${WORK}/rotbg --rotate 2 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 8 --dispatches 6 --pipelines 2)
  unset(ENV{VKPROF_LAYER_BUSY_EVERY})
  expect("VKPROF_LAYER_BUSY_EVERY=4x" "${err}" "VKPROF_LAYER_BUSY_EVERY='4x' is not a whole number 1..1000000; using 1")
  expect("VKPROF_LAYER_BUSY_EVERY=4x" "${err}" "each one stamped in every step \\(8 buffers, exact\\)")
  # --busy on wins over the environment's schedule: every step
  set(ENV{VKPROF_LAYER_BUSY_EVERY} "4")
  timed_run(120 ${VKPROF} run -o ${WORK}/rotbon --rotate 2 --busy on --layer-dir ${LAYER_DIR} -- ${APP} --iterations 8 --dispatches 6 --pipelines 2)
  unset(ENV{VKPROF_LAYER_BUSY_EVERY})
  expect("--busy on, VKPROF_LAYER_BUSY_EVERY=4" "${err}" "each one stamped in every step \\(8 buffers, exact\\)")
  # one recording submitted at every step (--resubmit), under the default:
  # each execution counts its calls again (the library's calls are the
  # layer's executed dispatches), so the estimate is each phase's first
  # call once and the mean of the rest times its executions. Scaled 16x
  # whole, lavapipe's 1.3 ms first dispatch made the GPU 1.93 ms a step
  # against every dispatch's 0.64; counted once, at recording, 1/16 of it
  # (issue 26)
  timed_run(60 ${VKPROF} run -o ${WORK}/resubmit --layer-dir ${LAYER_DIR} -- ${APP} --iterations 16 --dispatches 6 --resubmit)
  expect("resubmit" "${err}" "recordings were submitted more than once \\(16.000 dispatches executed per one recorded\\)")
  # recorded in the first step (never a busy step), the one buffer's busy
  # scope is left out at each execution: the run says the busy time was not
  # measured, and why, where it used to print no busy line at all
  expect("resubmit" "${err}" "GPU busy: not measured: none of the 16 command buffers that ran was timed \\(recordings submitted more than once keep the kind of the step they were recorded in")
  string(REGEX MATCH "\n      GPU ([0-9.]+) ms per step over 16 steps \\(~: rotating" _ "${err}")
  set(said "${CMAKE_MATCH_1}")
  if(said STREQUAL "" OR NOT PYTHON)
    message(FATAL_ERROR "resubmit: no GPU per step line (or no python)\n${err}")
  endif()
  file(GLOB rsum ${WORK}/resubmit/*.summary.json)
  execute_process(COMMAND ${PYTHON} -c "
import json, sys
s = json.load(open(sys.argv[1])); d = s['devices'][0]; f = d['queue_families'][0]['dispatches']
ph = [p for p in d['contexts'][0]['snapshot']['phases'] if p['calls'] > 0 and not p.get('outer')]
calls = sum(p['calls'] for p in ph)
est = sum(p['est_total_ns'] for p in ph) / d['steps'] / 1e6
want = sum(p['first_ns'] + (p['total_ns'] - p['first_ns']) / (p['count'] - p['first_calls']) * (p['calls'] - p['first_calls']) for p in ph if p['count'] > p['first_calls']) / d['steps'] / 1e6
print('executed %d, recorded %d, calls %d; estimate %.3f ms a step, first calls once and the rest scaled: %.3f; said %s' % (f['executed'], f['recorded'], calls, est, want, sys.argv[2]))
ok = f['executed'] == 16 * f['recorded'] and calls == f['executed'] and all(p['first_calls'] == 1 for p in ph)
sys.exit(0 if ok and abs(est - float(sys.argv[2])) <= 0.0015 and abs(want - est) <= 0.0015 else 1)
" ${rsum} ${said} RESULT_VARIABLE rc OUTPUT_VARIABLE pyout ERROR_VARIABLE pyerr)
  message(STATUS "resubmit: ${pyout}${pyerr}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "resubmit: the library's calls are not the dispatches executed, or the estimate is not each phase's first call once and the rest scaled to its executions")
  endif()
  # a run of one step never reaches a busy step (the first never is one):
  # said, not left out
  timed_run(60 ${VKPROF} run -o ${WORK}/one-step --layer-dir ${LAYER_DIR} -- ${APP} --iterations 1 --dispatches 6)
  expect("one step" "${err}" "GPU busy: not measured: none of the 1 command buffers that ran was timed \\(none ran in a busy step: a run of few steps\\)")
  # a garbage VKPROF_LAYER_BUSY is warned about; the default (on) is kept
  set(ENV{VKPROF_LAYER_BUSY} "sometimes")
  timed_run(60 ${VKPROF} run -o ${WORK}/busy-garbage --layer-dir ${LAYER_DIR} -- ${APP} --iterations 2 --dispatches 6)
  unset(ENV{VKPROF_LAYER_BUSY})
  expect("garbage busy" "${err}" "VKPROF_LAYER_BUSY='sometimes' is not on or off; using on")
  expect("garbage busy" "${err}" "GPU busy [0-9.]+ ms per step: its command buffers' time")
  # VKPROF_LAYER_BUSY_BEGIN=top: the buffers' begin stamps at the top of the
  # pipe, validation silent, the busy line there; garbage is warned about
  set(ENV{VKPROF_LAYER_BUSY_BEGIN} "top")
  timed_run(60 ${VKPROF} run -o ${WORK}/busy-top --busy on --layer-dir ${LAYER_DIR} -- ${APP} --iterations 4 --dispatches 6 --validation)
  expect_not("busy top" "${out}${err}" "VUID-|Validation Error|BUSY_BEGIN")
  expect("busy top" "${err}" "GPU busy [0-9.]+ ms per step: its command buffers' time, each one stamped in every step \\(4 buffers, exact\\)")
  set(ENV{VKPROF_LAYER_BUSY_BEGIN} "bottom")
  timed_run(60 ${VKPROF} run -o ${WORK}/busy-top-garbage --layer-dir ${LAYER_DIR} -- ${APP} --iterations 2 --dispatches 6)
  unset(ENV{VKPROF_LAYER_BUSY_BEGIN})
  expect("garbage busy begin" "${err}" "VKPROF_LAYER_BUSY_BEGIN='bottom' is not top or all; using all")
  file(GLOB etr ${WORK}/every/*.trace.json)
  timed_run(60 ${VKPROF} report ${etr})
  expect("report of every dispatch" "${out}" "GPU busy and idle per step \\(each queue's timed GPU work")
  set(rc "${rot_rc}")
  set(out "${rot_out}")
  set(err "${rot_err}")
  expect_not("rotate" "${out}${err}" "VUID-|Validation Error")
  expect("rotate" "${err}" "rotating window: 2 dispatches timed a step \\(\\+1 boundary stamp\\)")
  expect("rotate" "${err}" ": 768 dispatches executed \\(768 recorded\\): 194 timed, 574 untimed: not_in_window 574\n")
  expect("rotate" "${err}" "rotating: 2 dispatches stamped a step of 8, every position once in 4 steps; 24 passes completed; 194 of 768 calls stamped\n")
  expect("rotate" "${err}" "first calls: each phase's first dispatch is stamped whatever the window and counted once, not scaled \\(a driver may compile a pipeline there\\): 4 calls, ")
  expect("rotate" "${err}" "lost: none")
  expect("rotate" "${err}" "GPU busy [0-9.]+ ms per step: its command buffers' time, each one stamped in every step \\(96 buffers, exact\\); the dispatches' estimate above is [0-9.]+x it")
  expect_not("rotate" "${err}" "not timed yet")
  expect("rotate" "${err}" "profiling cost: not measured in this run \\(--cost-probe B measures it\\); this mode adds a few stamps a step \\(the window\\) and 2 a command buffer \\(its busy time\\)")
  # a garbage VKPROF_LAYER_ROTATE is warned about; every dispatch is timed
  set(ENV{VKPROF_LAYER_ROTATE} "2x")
  timed_run(60 ${VKPROF} run -o ${WORK}/garbage --layer-dir ${LAYER_DIR} -- ${APP} --iterations 2 --dispatches 6)
  unset(ENV{VKPROF_LAYER_ROTATE})
  expect("garbage rotate" "${err}" "VKPROF_LAYER_ROTATE='2x' is not a whole number 0..1048576; using 0")
  expect("garbage rotate" "${err}" "\n +alpha +6 ")
  # --cost-probe 4 (issue 26): the report measures what profiling costs
  # the run. 64 steps: the first pair of blocks (8 steps) on, then in each
  # pair of blocks of 4 one at random off: 28 steps with profiling and 28
  # without; the window moves only in steps with profiling (36, K = 2: 72
  # stamped); the dispatches of the blocks off are untimed, cost_probe
  timed_run(120 ${VKPROF} run -o ${WORK}/cost --cost-probe 4 --rotate 2 --busy on --layer-dir ${LAYER_DIR} -- ${APP} --iterations 64 --dispatches 6 --validation)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--cost-probe: exit ${rc}")
  endif()
  expect_not("cost probe" "${out}${err}" "VUID-|Validation Error")
  # (by the 7 pairs of blocks after the warm-up: their differences)
  expect("cost probe" "${err}" "\n    profiling cost, measured in this run: [-+][0-9.]+% \\+- [0-9.]+% of a step's wall time \\(standard error, over 7 pairs of blocks of steps, one block of each pair profiled, which one at random\\)\n      a step took [0-9.]+ us with profiling and [0-9.]+ us without \\(28 and 28 steps\\)\n")
  expect("cost probe" "${err}" ": 384 dispatches executed \\(384 recorded\\): 72 timed, 312 untimed: not_in_window 144, cost_probe 168\n")
  # every call that ran is counted, the blocks off too: each phase's
  # estimate covers all 64 steps, and the buffers' busy time those not
  # stamped (their estimate, said so)
  expect("cost probe" "${err}" "\n +alpha +[1-9][0-9]* +192 ")
  expect("cost probe" "${err}" "\n +beta +[1-9][0-9]* +192 ")
  expect("cost probe" "${err}" "\\(~: rotating window and the cost probe's blocks, each phase's mean times its calls: an estimate\\)")
  expect("cost probe" "${err}" "stamped in every profiled step \\(36 of 64 buffers timed, the rest estimated: 28 left out by the cost probe\\)")
  expect("cost probe" "${err}" "; 72 of 384 calls stamped\n")
  expect("cost probe" "${err}" "lost: none")
  file(GLOB cs ${WORK}/cost/*.summary.json)
  file(READ ${cs} cj)
  expect("cost probe summary" "${cj}" "\"cost_block\":4")
  expect("cost probe summary" "${cj}" "\"cost_probe\":{\"on\":{\"steps\":28,\"sum_ns\":[1-9][0-9]*,\"mean_us\":[0-9.]+,\"sd_us\":[0-9.]+,\"host_ns\":{\"record\":[1-9][0-9]*,\"submit\":[1-9][0-9]*,\"wait\":[1-9][0-9]*,\"spin\":[0-9]+,\"collect\":[1-9][0-9]*,\"layer_submit\":[1-9][0-9]*}},\"off\":{\"steps\":28,\"sum_ns\":[1-9][0-9]*,\"mean_us\":[0-9.]+,\"sd_us\":[0-9.]+,\"host_ns\":{\"record\":[1-9][0-9]*,")
  # where the cost went: the host's time a step in each kind of call, in
  # the profiled steps against the others, and the rest
  expect("cost probe" "${err}" "\n      where, us a step with profiling / without: recording [0-9.]+ / [0-9.]+ \\([-+][0-9.]+\\), submitting [0-9.]+ / [0-9.]+ \\([-+][0-9.]+\\), waiting [0-9.]+ / [0-9.]+ \\([-+][0-9.]+\\), spinning on vkGetFenceStatus [0-9.]+ / [0-9.]+ \\([-+][0-9.]+\\), the layer's reading [0-9.]+ / [0-9.]+ \\([-+][0-9.]+\\), its work at submits [0-9.]+ / [0-9.]+ \\([-+][0-9.]+\\); the rest \\(the app's work between these calls\\) [-+][0-9.]+\n")
  # by state, not swapped: only the profiled steps have results to read (on
  # lavapipe a read waits for the device)
  if(NOT err MATCHES "the layer's reading ([0-9.]+) / ([0-9.]+) \\(")
    message(FATAL_ERROR "cost probe: no reading figures")
  endif()
  if(NOT CMAKE_MATCH_1 GREATER CMAKE_MATCH_2)
    message(FATAL_ERROR "cost probe: the profiled steps' reading (${CMAKE_MATCH_1} us a step) is not above the others' (${CMAKE_MATCH_2})")
  endif()
  expect("cost probe summary" "${cj}" "\"pairs\":{\"pairs\":7,\"mean_diff_us\":[-0-9.]+,\"sd_diff_us\":[0-9.]+,\"off_mean_us\":[0-9.]+}")
  # fewer than 3 pairs (40 steps, blocks of 8: 16 warm-up, a pair and a
  # half): over single steps, said so
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/cost-few --cost-probe 8 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 40 --dispatches 6)
  expect("few pairs" "${err}" "profiling cost, measured in this run: [-+][0-9.]+% \\+- [0-9.]+% of a step's wall time \\(standard error over single steps: fewer than 3 pairs of blocks\\)\n      a step took [0-9.]+ us with profiling and [0-9.]+ us without \\(8 and 16 steps\\)")
  # a short run: too few steps after the warm-up, said so
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/cost-short --cost-probe 16 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 8 --dispatches 6)
  expect("short cost probe" "${err}" "profiling cost: not measured \\(0 steps with profiling, 0 without, after the warm-up")
  # a recording made once and submitted at every step: the probe cannot
  # leave a block unprofiled; the 12 executions in blocks meant to be off
  # (of 32 steps: 8 warm-up, 12 on, 12 off) are counted, and no cost claimed
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/cost-resubmit --cost-probe 4 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 32 --dispatches 6 --resubmit --validation)
  expect("resubmitted cost probe" "${err}" "profiling cost: not measured \\(12 of 32 command buffers ran in a step of the other state than they were recorded in")
  expect("resubmitted cost probe" "${err}" ": 192 dispatches executed \\(6 recorded\\): 192 timed\n")
  expect_not("resubmitted cost probe" "${out}${err}" "VUID-|Validation Error")
  # with --sample too: a buffer left out by the sampling in a block meant
  # to be off is of that block's state (it used to count as mixed)
  timed_run(60 ${VKPROF} run -o ${WORK}/cost-sampled --sample 2 --cost-probe 4 --layer-dir ${LAYER_DIR} -- ${APP} --iterations 64 --dispatches 6)
  expect("sampled cost probe" "${err}" "profiling cost, measured in this run: [-+][0-9.]+% \\+- [0-9.]+% of a step's wall time \\(standard error, over 7 pairs")
  expect_not("sampled cost probe" "${err}" "ran in a step of the other state")
  set(ENV{VKPROF_LAYER_COST_BLOCK} "many")
  timed_run(60 ${VKPROF} run --rotate 0 -o ${WORK}/cost-garbage --layer-dir ${LAYER_DIR} -- ${APP} --iterations 2 --dispatches 6)
  unset(ENV{VKPROF_LAYER_COST_BLOCK})
  expect("garbage cost block" "${err}" "VKPROF_LAYER_COST_BLOCK='many' is not a whole number 0..1048576; using 0")
  expect("garbage cost block" "${err}" "profiling cost: not measured in this run \\(--cost-probe B measures it\\); this mode adds a stamp after every dispatch")
  # a window moves over dispatches at each step: refused with another mode
  timed_run(20 ${VKPROF} run -o ${WORK}/label --rotate 2 --mode label --layer-dir ${LAYER_DIR} -- ${APP})
  if(rc EQUAL 0)
    message(FATAL_ERROR "--rotate 2 --mode label was not refused")
  endif()
  expect("rotate with label" "${err}" "--rotate")
  # VKPROF_LAYER_DIAG_STAMPS (a diagnostic of what the stamps cost): top
  # still reads every scope (at meaningless times), none records no stamp
  # and every scope is lost, counted; both said at start, validation clean
  set(ENV{VKPROF_LAYER_DIAG_STAMPS} top)
  timed_run(60 ${VKPROF} run -o ${WORK}/diag-top --layer-dir ${LAYER_DIR} -- ${APP} --iterations 8 --dispatches 6 --validation)
  expect("diag top" "${err}" "VKPROF_LAYER_DIAG_STAMPS=top: every stamp waits for nothing")
  expect("diag top" "${err}" "samples [1-9][0-9]*: collected [1-9][0-9]*, dropped 0, pending 0; lost: none")
  expect_not("diag top" "${out}${err}" "VUID-|Validation Error")
  set(ENV{VKPROF_LAYER_DIAG_STAMPS} none)
  timed_run(60 ${VKPROF} run -o ${WORK}/diag-none --rotate 4 --busy on --layer-dir ${LAYER_DIR} -- ${APP} --iterations 8 --dispatches 6 --validation)
  expect("diag none" "${err}" "VKPROF_LAYER_DIAG_STAMPS=none: no stamp is recorded")
  expect("diag none" "${err}" "samples 32: collected 0, dropped 32, pending 0; lost 32: reset 32")
  expect_not("diag none" "${out}${err}" "VUID-|Validation Error")
  set(ENV{VKPROF_LAYER_DIAG_STAMPS} sometimes)
  timed_run(60 ${VKPROF} run -o ${WORK}/diag-garbage --layer-dir ${LAYER_DIR} -- ${APP} --iterations 2 --dispatches 6)
  unset(ENV{VKPROF_LAYER_DIAG_STAMPS})
  expect("diag garbage" "${err}" "VKPROF_LAYER_DIAG_STAMPS='sometimes' is not top, none or off; using off")
  expect("diag garbage" "${err}" "lost: none")
else()
  message(FATAL_ERROR "unknown CASE ${CASE}")
endif()
