# Installs ferry from BINARY_DIR into a scratch prefix, builds examples/embed against the
# installed package with find_package(ferry), and runs it (build, compile, save, load, run).
# Fails on any step.
set(scratch ${BINARY_DIR}/embed-test)
file(REMOVE_RECURSE ${scratch})
file(MAKE_DIRECTORY ${scratch})

function(step)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${scratch} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${scratch}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/embed -B ${scratch}/build -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${scratch}/prefix -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_CXX_COMPILER=${COMPILER}
     "-DCMAKE_CXX_FLAGS=${APP_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${APP_FLAGS}")
step(${CMAKE_COMMAND} --build ${scratch}/build)
step(${scratch}/build/embed)
message(STATUS "embed example output:\n${step_output}")
if(NOT step_output MATCHES "graph embed_mlp")
  message(FATAL_ERROR "embed example did not print its graph")
endif()
# It compiled, saved, loaded and ran the model (the program checks the values itself).
if(NOT step_output MATCHES "y: f32\\[4,3\\] @cpu, y\\[0\\] sums to 1\\.0000" OR
   NOT EXISTS ${scratch}/embed_mlp.ferry)
  message(FATAL_ERROR "embed example did not save, load and run the model")
endif()
