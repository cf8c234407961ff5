// tests/alloc/fault_sweep_test.cpp — the allocation-failure sweep: each stage of a model's life
// (parse and compile, save and load, Session::create, one Session::run; an ONNX import) is counted,
// then done again with its 1st, 2nd, ... last allocation failing (failAllocation,
// alloc/alloc_count.h). Each time the stage must return a clean "memory" error, or succeed with the
// right result where the failure was caught and recovered from; then, unarmed, the same stage (for
// a run, on the same Session) must give the unfaulted result. A std::bad_alloc that escapes is
// reported, not a crash; one thrown where nothing may throw (a destructor, a noexcept function, a
// pool worker) terminates the binary, which fails its ctest.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <new>
#include <optional>

#include "alloc/alloc_count.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/tensor_data.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry::alloctest {
namespace {

// One stage of a model's life: `prepare` (unarmed) readies its arguments, `run` is what the
// faults hit, `fingerprint` (unarmed) says what its result is, to compare with the unfaulted one.
template <class T> struct Stage {
  std::function<void()> prepare = [] {};
  std::function<Expected<T>()> run;
  std::function<std::string(T &)> fingerprint;
};

struct Sweep {
  long allocations = 0;     // of one unfaulted run of the stage
  long memoryErrors = 0;    // faults that came back as a "memory" error
  long recovered = 0;       // faults after which the stage still succeeded, with the right result
  long notReached = 0;      // armed faults the stage did not reach (fewer allocations that time)
  std::string recoveredAt;  // which allocations, " 12 40"
};

std::string firstCodes(const Status &s) {
  std::string codes;
  for (const Diagnostic &d : s.diagnostics()) codes += (codes.empty() ? "" : ",") + d.code;
  return codes;
}

template <class T> Sweep sweep(const std::string &what, const Stage<T> &stage) {
  auto once = [&]() -> Expected<T> {
    stage.prepare();
    try {
      return stage.run();
    } catch (const std::bad_alloc &) {
      return makeError("escaped", "std::bad_alloc escaped");
    }
  };
  Sweep result;
  Expected<T> first = once();  // warm up: function-local statics, the kernel pool
  EXPECT_TRUE(first.ok()) << what << ": " << first.status().message();
  if (!first) return result;
  const std::string expected = stage.fingerprint(*first);
  stage.prepare();
  const long before = allocationCount();
  {
    Expected<T> counted = stage.run();
    result.allocations = allocationCount() - before;
    EXPECT_TRUE(counted.ok());
  }
  for (long n = 1; n <= result.allocations; ++n) {
    stage.prepare();
    failAllocation(n);
    std::optional<Expected<T>> faulted;
    try {
      faulted.emplace(stage.run());
    } catch (const std::bad_alloc &) {
      faulted.emplace(makeError("escaped", "std::bad_alloc escaped"));
    }
    const bool fired = disarmFailure();
    if (!fired) {
      ++result.notReached;
    } else if (faulted->ok()) {
      ++result.recovered;
      result.recoveredAt += " " + std::to_string(n);
      EXPECT_EQ(stage.fingerprint(**faulted), expected)
          << what << ": allocation " << n << " failed, the stage succeeded with a wrong result";
    } else if (firstCodes(faulted->status()) == "memory") {
      ++result.memoryErrors;
    } else {
      ADD_FAILURE() << what << ": allocation " << n << " of " << result.allocations
                    << " failed: expected one 'memory' error, got ["
                    << firstCodes(faulted->status()) << "] " << faulted->status().message();
    }
    faulted.reset();
    Expected<T> again = once();
    if (!again.ok() || stage.fingerprint(*again) != expected)
      ADD_FAILURE() << what << ": after allocation " << n << " failed, the stage unfaulted "
                    << (again.ok() ? "gave a wrong result" : "failed: " + again.status().message());
  }
  std::printf("%s: %ld allocations; faults: %ld memory errors, %ld recovered (allocations%s), "
              "%ld not reached\n",
              what.c_str(), result.allocations, result.memoryErrors, result.recovered,
              result.recoveredAt.empty() ? " none" : result.recoveredAt.c_str(), result.notReached);
  return result;
}

std::string outputsOf(const RunResult &r) {
  std::string bytes;
  for (const NamedTensor &o : r.outputs) {
    bytes += o.name + ":" + o.tensor.type().str() + ":";
    bytes.append(reinterpret_cast<const char *>(o.tensor.bytes().data()), o.tensor.byteSize());
  }
  return bytes;
}

void sweepModel(const std::string &model, const CompileOptions &options) {
  const std::string path = std::string(FERRY_SOURCE_DIR) + "/" + model;
  std::optional<CompileOptions> given;  // build() takes its options by value: copied unarmed
  const Sweep compiled =
      sweep<Executable>(model + ": parse and build",
                        {.prepare = [&] { given.emplace(options); },
                         .run = [&]() -> Expected<Executable> {
                           Expected<Graph> g = parseFile(path);
                           if (!g) return std::move(g).takeStatus();
                           return build(std::move(*g), std::move(*given));
                         },
                         .fingerprint = [](Executable &exe) { return exe.serialize(); }});
  EXPECT_GT(compiled.allocations, 0);

  Expected<Graph> g = parseFile(path);
  ASSERT_TRUE(g.ok());
  Expected<Executable> exe = build(std::move(*g), options);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  // A name of this process's own: ctest runs the sweeps of several models at once.
  const std::string saved = testing::TempDir() + "fault_sweep_" + std::to_string(getpid()) + "_" +
                            std::filesystem::path(model).stem().string() + ".ferry";
  sweep<Executable>(model + ": save and load",
                    {.run = [&]() -> Expected<Executable> {
                       if (Status s = exe->save(saved); !s.ok()) return s;
                       return Executable::load(saved);
                     },
                     .fingerprint = [](Executable &e) { return e.serialize(); }});
  std::remove(saved.c_str());

  std::vector<NamedTensor> inputs;
  for (int32_t i : exe->inputs) {
    const Slot &s = exe->slots[static_cast<size_t>(i)];
    inputs.push_back({s.name, Tensor(TensorData::randn(s.type.dtype, s.type.shape, 7))});
  }
  const Session::Options checked{.checkPlan = true};
  std::optional<Executable> copy;
  sweep<Session>(model + ": Session::create",
                 {.prepare = [&] { copy.emplace(*exe); },
                  .run = [&]() { return Session::create(std::move(*copy), checked); },
                  .fingerprint =
                      [&](Session &s) {
                        Expected<RunResult> r = s.run(inputs);
                        return r.ok() ? outputsOf(*r) : r.status().message();
                      }});

  Expected<Session> session = Session::create(*exe, checked);
  ASSERT_TRUE(session.ok()) << session.status().message();
  const Sweep ran = sweep<RunResult>(model + ": Session::run",
                                     {.run = [&]() { return session->run(inputs); },
                                      .fingerprint = [](RunResult &r) { return outputsOf(r); }});
  EXPECT_GT(ran.allocations, 0);
}

TEST(FaultSweep, Mlp) { sweepModel("examples/mlp.fy", CompileOptions{}); }

// Two devices: a transfer per run, the weights of the first layer on cpu:1.
TEST(FaultSweep, MlpSplitOverTwoDevices) {
  CompileOptions options;
  options.devices = {Device::cpu(), *parseDevice("cpu:1")};
  options.placement = PlacementPolicy::Auto;
  sweepModel("examples/mlp_split.fy", options);
}

// The importer: protobuf's parsing, the conversion of every node and initializer, the verifier.
TEST(FaultSweep, OnnxImport) {
  const std::string path = std::string(FERRY_SOURCE_DIR) + "/tests/onnx_models/mlp/model.onnx";
  OnnxImportOptions options;
  options.inputShapes["x"] = {4, 784};  // its batch dim is symbolic
  const Sweep imported = sweep<Graph>("tests/onnx_models/mlp/model.onnx: import",
                                      {.run = [&] { return importOnnxFile(path, options); },
                                       .fingerprint = [](Graph &g) { return printGraph(g); }});
  EXPECT_GT(imported.allocations, 0);
}

}  // namespace
}  // namespace ferry::alloctest
