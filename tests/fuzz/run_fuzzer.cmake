# tests/fuzz/run_fuzzer.cmake — ctest's fuzz.run.<kind>: a short libFuzzer run of one target from a
# fresh copy of its seeds, so that every `make test-asan` fuzzes each target a little.
#   cmake -DFUZZER=bin -DWORK=dir -DSEEDS='file|folder|...' -DDICT=file -DMAX_LEN=n -DSECONDS=n -P run_fuzzer.cmake
# The corpus grows in WORK/corpus; a crash, leak or timeout fails the test and leaves its input in
# WORK (crash-<sha1>, leak-..., timeout-...): keep it under tests/fuzz/regressions/<kind>/ once fixed.
foreach(var FUZZER WORK SEEDS MAX_LEN SECONDS)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_fuzzer.cmake: -D${var}=... is missing")
  endif()
endforeach()

# libFuzzer fuzzes only when every argument is a folder (files are run once), so the seeds are
# copied into one, numbered: the ONNX cases are all called model.onnx.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
string(REPLACE "|" ";" seeds "${SEEDS}")
set(n 0)
foreach(seed IN LISTS seeds)
  if(IS_DIRECTORY ${seed})
    file(GLOB files LIST_DIRECTORIES false ${seed}/*)
  elseif(EXISTS ${seed})
    set(files ${seed})
  else()
    message(FATAL_ERROR "run_fuzzer.cmake: no seed file or folder '${seed}'")
  endif()
  foreach(f IN LISTS files)
    math(EXPR n "${n} + 1")
    get_filename_component(name ${f} NAME)
    file(COPY_FILE ${f} ${WORK}/corpus/${n}-${name})
  endforeach()
endforeach()
if(n EQUAL 0)
  message(FATAL_ERROR "run_fuzzer.cmake: no seeds in '${SEEDS}'")
endif()

set(dict "")
if(DICT)
  set(dict -dict=${DICT})
endif()
# -timeout: one input running a minute is a hang; -rss_limit_mb: libFuzzer's default, said aloud.
execute_process(COMMAND ${FUZZER} -max_total_time=${SECONDS} -max_len=${MAX_LEN} -timeout=60
                        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=${WORK}/ ${dict}
                        ${WORK}/corpus
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${rc}) from ${n} seeds: its input is in ${WORK}")
endif()
message(STATUS "fuzzed for ${SECONDS} s from ${n} seeds, no crash")
