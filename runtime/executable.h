// runtime/executable.h — a compiled graph lowered for running: an ordered list of steps over
// numbered tensor slots, each step with the kernel plan its device kind's target wrote, each
// slot with its device and its place in that device's workspace, and the weights (already cast
// and placed by the compiler) attached.
//
// An Executable is plain data: it holds no device memory and can be saved, loaded, copied and
// shared by many Sessions (runtime/session.h), which own the memory it is run in. Lowering
// (passes/lower.h) makes it; the runtime only reads it, so an app that loads a saved executable
// links no part of the compiler.
//
// What lowering decided, and the executable records:
//   - constants are weights (computed once, never by a kernel at run time);
//   - transfers and casts of weights are load steps: done once, when a Session is created, into
//     slots held with the weights (a weight's copy on another device or in another dtype), never
//     per run (passes/load_time.h);
//   - each step's kernel plan (backends/target.h): which kernel, its scratch bytes, its payload;
//   - inputs and outputs on host memory are the caller's tensors (Slot::external): no workspace
//     bytes, no copy in or out;
//   - every other activation, input and step scratch has an offset in its device's workspace: pieces
//     whose lifetimes (first write to last read, in step order) overlap never share bytes, the
//     rest reuse them (greedy by size, see runtime/memory_plan.cpp);
//   - the plan's data movement is counted, so a Session can check the copies it makes against
//     it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/target.h"
#include "ir/graph.h"
#include "ir/policy.h"

namespace ferry {

/// Where a slot's bytes come from.
enum class SlotKind : uint8_t {
  Input,       ///< read in place by Session::run (external), or copied into the workspace
  Weight,      ///< given to its device once per Session (read in place on the CPU)
  Activation,  ///< written by a step, lives in the workspace
  Loaded,      ///< written once by a load step when a Session is created, held with the weights
};

/// One tensor the executable touches.
struct Slot {
  std::string name;  ///< the value's name in the compiled graph (inputs and outputs: the API's)
  TensorType type;
  Device device;
  SlotKind kind = SlotKind::Activation;
  int32_t weight = -1;  ///< Weight: index in Executable::weights
  size_t offset = 0;    ///< Input, Activation: byte offset in the device's workspace
  /// An input, or an activation that is an output, held in the caller's memory rather than the
  /// workspace (its device's target has host memory, Target::hostMemory): a run reads the input
  /// where the caller's tensor is and writes the output where the caller receives it. No
  /// workspace bytes; offset 0.
  bool external = false;
};

/// One step: op, complete attributes, operand slots and the slot it writes, and how it runs —
/// a `transfer` is a copy the runtime makes between devices; every other step is the kernel its
/// plan names, with `plan.scratchBytes` of scratch at `scratchOffset` in its device's workspace
/// (a load step's scratch is allocated by Session::create for the step alone; its offset is 0).
struct Step {
  OpKind op = OpKind::Identity;
  Attrs attrs;
  std::vector<int32_t> operands;
  int32_t result = -1;
  Location loc;
  bool inserted = false;  ///< a transfer or cast the compiler inserted
  KernelPlan plan;  ///< empty for a transfer, and where lowering had no target for the device
  size_t scratchOffset = 0;
  /// A fused step (a fusion group, passes/fusion.h): its micro-ops (backends/target.h), which
  /// read `operands`, the group's inputs; `op` and `attrs` are the body's anchor's (or its last
  /// micro-op's). Empty for a step of one node.
  FusedBody body;
};

/// What a step computes, for reports and traces: its op's name (`linear`), or for a fused step its
/// micro-ops' joined by '+', each once (`linear+gelu+add`).
std::string stepOpName(const Step &step);

/// Workspace bytes one device needs for one run in flight.
struct Workspace {
  Device device;
  size_t bytes = 0;
};

struct Executable {
  /// Bumped whenever the saved form changes; load() rejects other versions.
  static constexpr uint32_t kFormatVersion = 6;
  /// Workspace offsets are multiples of this.
  static constexpr size_t kAlignment = 64;

  std::string name;  ///< the graph's
  /// How inputs are checked by default: strict rejects an input on another device than its
  /// declared one; auto moves it there (Session::Options::moveInputs).
  PlacementPolicy placement = PlacementPolicy::Strict;
  std::vector<Device> devices;  ///< every device a slot lives on, sorted
  std::vector<Slot> slots;
  std::vector<int32_t> inputs;   ///< slot ids, in the graph's input order
  std::vector<int32_t> outputs;  ///< slot ids, in the graph's output order
  std::vector<TensorData> weights;
  std::vector<Step> steps;  ///< what every run does, in order
  /// What Session::create does once, in order, before any run: transfers and casts (and
  /// identities) of weights, each writing a Loaded slot from Weight and Loaded slots. Never part
  /// of a run.
  std::vector<Step> loadSteps;
  std::vector<Workspace> workspaces;  ///< one per device that has inputs or activations
  int planTransfers = 0;              ///< transfer steps, i.e. copies between devices per run
  int64_t planTransferBytes = 0;
  int planLoadTransfers = 0;  ///< transfer load steps: copies between devices once per Session
  int64_t planLoadTransferBytes = 0;

  /// The slot id of input or output `name`, or -1.
  int32_t findInput(std::string_view name) const;
  int32_t findOutput(std::string_view name) const;

  /// Each slot's lifetime in step indices, as the memory plan counts it: `first` is the step
  /// writing it (-1 for an input: before the first step), `last` the last step reading or
  /// writing it (steps.size() for an output: after the last step; -1 for a slot no step touches).
  struct Lifetimes {
    std::vector<int64_t> first, last;
  };
  Lifetimes slotLifetimes() const;

  /// What load() and deserialize() accept.
  struct LoadOptions {
    /// Weights taking more bytes than this in all are an error (code "artifact"), found from
    /// their declared types before any of them is read.
    int64_t maxTotalWeightBytes = int64_t{1} << 34;
  };

  /// Writes the executable to `path` (see docs/artifact.md for the layout), streamed: the
  /// weights go to the file from where they are, never copied into a buffer. Errors name the
  /// file and what failed. Running out of host memory in save(), load() or deserialize() is an
  /// error with code "memory" ("out of memory while loading m.ferry"); serialize() throws
  /// std::bad_alloc then.
  Status save(const std::string &path) const;
  /// Reads a file written by save(). A file of another format or version, truncated, corrupted
  /// (checksum), or whose contents do not make a valid executable is an error naming the file
  /// and what was wrong; nothing a file holds can crash the loader. The file is mapped
  /// (read-only, private): the weights are views of its bytes, no copy (TensorData::isView), and
  /// the mapping lives as long as any of them. Replacing the file is safe (save() writes a new
  /// one and renames it over the old); truncating it in place while it is loaded is not.
  static Expected<Executable> load(const std::string &path, const LoadOptions &options);
  static Expected<Executable> load(const std::string &path) { return load(path, LoadOptions{}); }
  /// save() and load() on bytes in memory; `fileName` is used in errors. The weights
  /// deserialize() returns are copies (`bytes` need not outlive them).
  std::string serialize() const;
  static Expected<Executable> deserialize(std::string_view bytes, std::string_view fileName,
                                          const LoadOptions &options);
  static Expected<Executable> deserialize(std::string_view bytes, std::string_view fileName) {
    return deserialize(bytes, fileName, LoadOptions{});
  }

  /// Checks the executable's own consistency (slot types within ferry's limits (typeLimitError),
  /// slot ids in range, operand devices equal to the step's device except for transfers, which
  /// change device and have no kernel plan, weights of their slots' types, workspace offsets of
  /// slots and scratch inside the workspaces, inputs and activations written before read, load
  /// steps reading only weights and loaded slots and writing every loaded slot once, the plan's
  /// transfer counts those of the steps and of the load steps) and every step and load step
  /// against the op table: its result typed as the op's shape and dtype rules give for its
  /// operands and attributes, a promoting op's data operands in the dtype it computes in.
  /// Lowering, load() and Session::create run it; an error names the step or slot
  /// (`step 3 ('matmul'): ...`). Whether a plan fits its device kind's kernels is
  /// Session::create's to check.
  Status validate() const;
};

}  // namespace ferry
