# Installs ferry from BINARY_DIR into a scratch prefix, builds examples/embed against the
# installed package with find_package(ferry), and runs it. Fails on any step.
set(scratch ${BINARY_DIR}/embed-test)
file(REMOVE_RECURSE ${scratch})

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${scratch}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/embed -B ${scratch}/build -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${scratch}/prefix -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${scratch}/build)
step(${scratch}/build/embed)
message(STATUS "embed example output:\n${step_output}")
if(NOT step_output MATCHES "graph embed_mlp")
  message(FATAL_ERROR "embed example did not print its graph")
endif()
