// runtime/session.h — what an app embeds: an Executable with its weights on their devices,
// run as many times as wanted, from as many threads as wanted.
//
//   Expected<Session> s = Session::create(std::move(exe));   // places and moves the weights once
//   Expected<RunResult> r = s->run({{"x", x}});               // checks inputs, runs, returns
//
// Inputs are checked before anything runs: every declared input given once, by name, with its
// shape and dtype, on the device the plan wants it (or moved there, when moveInputs is on,
// and counted). Each error says which input and what was expected against what came.
//
// Load time: create() gives the weights to their devices, then runs the executable's load steps once — the
// transfers and casts of weights (a weight's copy on another device, or in another dtype) —
// counting their copies apart from any run's (loadStats()); with `checkPlan` the count must equal
// the plan's load-time transfers. A weight that only load steps read is released afterwards.
//
// Memory: a weight is read where the executable holds it when its device's runtime can read host
// memory in place (the CPU's: a loaded file's mapping, a parsed param), else it lives in a
// per-device allocation made once; every run in flight takes a workspace (one allocation per
// device, laid out by the executable's memory plan, activations and kernel scratch together)
// from a pool and gives it back, so concurrent runs never share activations and a steady stream
// of runs allocates nothing new. Each workspace carries its streams and the pointer table of
// every step (operands, result, scratch), computed once. Inputs and outputs on the CPU are the
// caller's memory (Slot::external): a run writes the caller's input pointers and the output
// buffers (the caller's own, or made for the run) into the workspace's tables, so that the
// kernels read the inputs and write the outputs in place, and nothing is copied in or out. An
// output the caller does not give is made from the session's output cache: the storage of
// outputs the caller has released (up to two runs' worth) is reused, so a loop of runs faults in
// no fresh pages; a returned output stays valid after the session is gone.
//
// Devices: one device runtime per device kind the executable uses, made from a registry
// (backends/registry.h; this build's by default) and used only through the DeviceRuntime
// interface (backends/device.h). create() prepares every step's kernel once from its plan, so
// run() does no lookup, no dispatch and no attribute parsing per step: it launches prepared
// kernels on the workspace's streams and issues the copies.
//
// Transfers: the session counts every copy that crosses devices where it issues it — the plan's
// transfer steps (a copy within one runtime, straight between its devices' memory, or between
// two runtimes through the side whose memory the host can read) and the input moves. With
// `checkPlan` on, a run whose count differs from the plan's transfer steps plus its input moves
// fails with an "internal" error: a bug in ferry, never a user error; checkPlan also checks,
// once per workspace, that every step reads and writes memory of its own device.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/registry.h"
#include "runtime/executable.h"
#include "runtime/tensor.h"

namespace ferry {

/// A tensor with the name of the input or output it is.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// What Session::create did once, before any run: the executable's load steps (transfers and
/// casts of weights). A run never repeats them, and RunStats never counts them.
struct LoadStats {
  int steps = 0;      ///< load steps run
  int transfers = 0;  ///< copies between devices among them, counted where they were issued
  int64_t transferBytes = 0;
  double seconds = 0;  ///< the load steps, first to last, devices synchronized
  /// Bytes of weights the kernels keep a packed copy of (Options::maxPackedWeightBytes).
  int64_t packedWeightBytes = 0;
};

/// What one run did.
struct RunStats {
  double seconds = 0;  ///< the whole run, input checks to outputs
  /// Per step of the executable, in order (empty unless RunOptions::profile): how long it took,
  /// its kernel launched and its device synchronized.
  std::vector<double> stepSeconds;
  /// Per step, in the same order: when it started, in seconds since the run started. Steps run
  /// one after another, so stepStarts[i] + stepSeconds[i] <= stepStarts[i + 1].
  std::vector<double> stepStarts;
  /// Making the inputs ready, after the input checks and before the first step (reading each in
  /// place, or copying it into the workspace; the input moves among them): when it started, in
  /// seconds since the run started, and how long it took.
  double inputCopyStart = 0;
  double inputCopySeconds = 0;
  /// Bytes copied into the workspace for the inputs, and out of it for the outputs. Both 0 on
  /// the CPU when every input is read in place (on its planned device, 64-byte aligned, as a
  /// Tensor's own storage is) and every output written where the caller receives it.
  int64_t inputCopyBytes = 0;
  int64_t outputCopyBytes = 0;
  /// Copies between devices, as the session counted them where it issued them: the plan's
  /// transfers and the input moves (never the load-time copies: Session::loadStats()).
  int transfers = 0;
  int64_t transferBytes = 0;
  int inputMoves = 0;  ///< inputs moved to their planned device (moveInputs)
  int64_t inputMoveBytes = 0;
};

struct RunResult {
  std::vector<NamedTensor> outputs;  ///< in the graph's output order
  RunStats stats;

  /// The output called `name`, or nullptr.
  const Tensor *find(std::string_view name) const;
};

class Session {
 public:
  struct Options {
    /// Move an input that arrives on another device than the plan's to that device (and count
    /// it), instead of rejecting it. Unset: on for executables compiled with `auto` placement,
    /// off for `strict` ones.
    std::optional<bool> moveInputs;
    /// Check memory ownership (copies, and each workspace's step operands once), and the copies
    /// between devices of every run against the plan (see the file comment). On in debug
    /// builds; tests turn it on.
#ifdef NDEBUG
    bool checkPlan = false;
#else
    bool checkPlan = true;
#endif
    /// Which device runtime runs each device kind; empty: this build's, builtinBackends().
    std::vector<BackendEntry> backends;
    /// How many bytes of weights kernels may keep a second copy of, in a layout of their own
    /// made when the session is created (StepSpec::constants): the CPU's f32 matmul and linear
    /// through oneDNN pack their weights when they multiply at most 32 rows, 1.3-1.8x faster
    /// (docs/architecture.md, "oneDNN GEMMs"), while the copies fit. The default keeps a large
    /// model's weights once, within 32 MiB; 0: every weight exists once, read in place.
    /// LoadStats::packedWeightBytes says what was taken.
    uint64_t maxPackedWeightBytes = uint64_t{32} << 20;
  };

  struct RunOptions {
    /// Return outputs labelled with the device they were computed on, instead of the host.
    bool outputsOnDevice = false;
    /// Time every step (RunStats::stepSeconds, stepStarts): two clock reads and, on
    /// asynchronous devices, a synchronize per step. Off, a run reads the clock only around the
    /// input copy and the whole run.
    bool profile = false;
  };

  /// Makes the device runtimes for the executable's devices, prepares every step's kernel,
  /// gives the weights to their devices (in place where the runtime lends host memory, else
  /// uploaded) and runs the load steps. An executable that fails validate(), needs a
  /// device this build has no runtime for, or has a kernel plan its runtime cannot prepare, is an
  /// error, and so is running out of host memory (code "memory").
  static Expected<Session> create(Executable exe, Options options);
  static Expected<Session> create(Executable exe) { return create(std::move(exe), Options{}); }

  Session(Session &&) noexcept;
  Session &operator=(Session &&) noexcept;
  ~Session();

  /// Runs once. Safe to call from many threads at once. Running out of memory is an error with
  /// code "memory" (an output's names it, its type and bytes); the session stays usable.
  Expected<RunResult> run(const std::vector<NamedTensor> &inputs, const RunOptions &options) const;
  Expected<RunResult> run(const std::vector<NamedTensor> &inputs) const {
    return run(inputs, RunOptions{});
  }
  /// Runs once, writing each output named in `outputs` into the tensor given there (I/O
  /// binding): a loop of runs into the same tensors allocates no output and touches no fresh
  /// page. A given tensor must have its output's dtype and shape, be on the device the output is
  /// returned on (the host; with outputsOnDevice, the device computing it), hold storage of its
  /// own (not a read-only view of a mapped file) and share no byte with an input, another
  /// given output or a weight; every problem is reported at once, with the inputs'. Outputs not named are
  /// allocated as run() allocates them. RunResult::outputs lists every output in order, the
  /// given ones sharing the caller's storage. A run that fails may have written some of them.
  Expected<RunResult> run(const std::vector<NamedTensor> &inputs,
                          const std::vector<NamedTensor> &outputs,
                          const RunOptions &options) const;

  const Executable &executable() const;
  /// What create() did once: the load steps and the copies they made.
  const LoadStats &loadStats() const;
  /// Bytes of device memory the weights take (their load-time copies included, weights only
  /// load steps read released; a weight read in place counts, though it is the executable's own
  /// bytes), and that one workspace takes (all devices).
  size_t weightBytes() const;
  size_t workspaceBytes() const;

 private:
  struct State;
  explicit Session(std::unique_ptr<State> state);
  // create() and run() without their catch of std::bad_alloc.
  static Expected<Session> make(Executable exe, Options options);
  Expected<RunResult> runOnce(const std::vector<NamedTensor> &inputs,
                              const std::vector<NamedTensor> &outputs,
                              const RunOptions &options) const;
  std::unique_ptr<State> state_;
};

}  // namespace ferry
