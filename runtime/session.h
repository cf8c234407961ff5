// runtime/session.h — what an app embeds: an Executable with its weights on their devices,
// run as many times as wanted, from as many threads as wanted.
//
//   Expected<Session> s = Session::create(std::move(exe));   // uploads the weights once
//   Expected<RunResult> r = s->run({{"x", x}});               // checks inputs, runs, returns
//
// Inputs are checked before anything runs: every declared input given once, by name, with its
// shape and dtype, on the device the plan wants it (or moved there, when moveInputs is on,
// and counted). Each error says which input and what was expected against what came.
//
// Memory: weights live in per-device allocations made once; every run in flight takes a
// workspace (one allocation per device, laid out by the executable's memory plan) from a pool
// and gives it back, so concurrent runs never share activations and a steady stream of runs
// allocates nothing new.
//
// Backends: one per device kind the executable uses, made from a registry
// (runtime/backend_registry.h; this build's by default) and used only through the Backend
// interface: weights, inputs and outputs move with Backend::upload/download, transfer steps
// with Backend::copy (or download + upload between two backends).
//
// Transfers: the backends count every copy that crosses devices as it happens (Traffic). With
// `checkPlan` on, a run whose counted copies and bytes differ from the plan's transfer steps
// plus its input moves fails with an "internal" error: a bug in ferry or in a backend the app
// supplied, never a user error.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backend_registry.h"
#include "runtime/executable.h"
#include "runtime/tensor.h"

namespace ferry {

/// A tensor with the name of the input or output it is.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// What one run did.
struct RunStats {
  double seconds = 0;               ///< the whole run, input checks to outputs
  std::vector<double> stepSeconds;  ///< per step of the executable, in order
  /// Per step, in the same order: when it started, in seconds since the run started. Steps run
  /// one after another, so stepStarts[i] + stepSeconds[i] <= stepStarts[i + 1].
  std::vector<double> stepStarts;
  /// Copying the inputs into the workspace (the input moves among them), after the input checks
  /// and before the first step: when it started, in seconds since the run started, and how long
  /// it took.
  double inputCopyStart = 0;
  double inputCopySeconds = 0;
  /// Copies between devices, as the backends counted them: the plan's transfers and the input
  /// moves.
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
    /// Check kernel operand ownership, and the copies between devices of every run against the
    /// plan (see the file comment). On in debug builds; tests turn it on.
#ifdef NDEBUG
    bool checkPlan = false;
#else
    bool checkPlan = true;
#endif
    /// Which backend runs each device kind; empty: this build's, builtinBackends().
    std::vector<BackendEntry> backends;
  };

  struct RunOptions {
    /// Return outputs labelled with the device they were computed on, instead of the host.
    bool outputsOnDevice = false;
  };

  /// Sets up the backends for the executable's devices and uploads its weights. An executable
  /// that fails validate(), or needs a device this build has no backend for, is an error.
  static Expected<Session> create(Executable exe, Options options);
  static Expected<Session> create(Executable exe) { return create(std::move(exe), Options{}); }

  Session(Session &&) noexcept;
  Session &operator=(Session &&) noexcept;
  ~Session();

  /// Runs once. Safe to call from many threads at once.
  Expected<RunResult> run(const std::vector<NamedTensor> &inputs, const RunOptions &options) const;
  Expected<RunResult> run(const std::vector<NamedTensor> &inputs) const {
    return run(inputs, RunOptions{});
  }

  const Executable &executable() const;
  /// Bytes of device memory the weights take, and that one workspace takes (all devices).
  size_t weightBytes() const;
  size_t workspaceBytes() const;

 private:
  struct State;
  explicit Session(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace ferry
