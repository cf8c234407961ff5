// tests/runtime_only/load_and_run.cpp — an app that only runs saved executables, linked against
// ferry_runtime alone (no compiler: tests/CMakeLists.txt links nothing else, so a reference to
// any pass would fail to link). It loads the .ferry file it is given, runs it on zero inputs and
// prints each output's name, type and first value.
//
//   load_and_run MODEL.ferry   exit 0 ran, 1 the executable was refused or a run failed
#include <cstdio>
#include <vector>

#include "runtime/executable.h"
#include "runtime/session.h"

int main(int argc, char **argv) {
  using namespace ferry;
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_and_run MODEL.ferry\n");
    return 2;
  }
  Expected<Executable> exe = Executable::load(argv[1]);
  if (!exe) {
    std::fprintf(stderr, "%s\n", exe.status().message().c_str());
    return 1;
  }
  std::vector<NamedTensor> inputs;
  for (int32_t slot : exe->inputs) {
    const Slot &s = exe->slots[static_cast<size_t>(slot)];
    inputs.push_back({s.name, Tensor(TensorData(s.type.dtype, s.type.shape))});
  }
  Expected<Session> session = Session::create(std::move(*exe));
  if (!session) {
    std::fprintf(stderr, "%s\n", session.status().message().c_str());
    return 1;
  }
  Expected<RunResult> r = session->run(inputs);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.status().message().c_str());
    return 1;
  }
  for (const NamedTensor &o : r->outputs)
    std::printf("%s %s %g\n", o.name.c_str(), o.tensor.data().type().str().c_str(),
                o.tensor.data().numel() > 0 ? o.tensor.data().at(0) : 0.0);
  return 0;
}
