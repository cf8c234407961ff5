// passes/lower.h — the last stage of the pipeline: a compiled graph becomes an Executable
// (runtime/executable.h), with a kernel plan per step from its device kind's target and the
// memory plan per device.
#pragma once

#include <vector>

#include "backends/registry.h"
#include "passes/compile.h"
#include "passes/options.h"
#include "runtime/executable.h"

namespace ferry {

/// Lowers a compiled graph (compile() ran the whole pipeline and accepted it) with the targets of
/// `backends` (this build's by default). A graph that is not placed or typed (stopped early,
/// rejected) is an error with code "lower". A step on a device kind without a target keeps an
/// empty kernel plan: the executable is complete for every other device, saves and loads, and
/// Session::create refuses it with an error naming the step, unless an app supplies a runtime
/// for that kind (compiling ahead of time for hardware this build lacks is allowed).
///
/// Steps are the graph's nodes in order, constants aside (they become weights) and transfers and
/// casts of weights aside (they become load steps, run once by Session::create: see
/// passes/load_time.h). Each non-transfer step gets the kernel plan its target writes; then each
/// device's workspace is planned:
/// inputs live from before the first step, outputs to after the last, a step's scratch during
/// that step alone.
Expected<Executable> lower(const Graph &compiled, const CompileOptions &options,
                           const std::vector<BackendEntry> &backends = builtinBackends());

/// The capability table of the targets of `backends` (this build's by default) as compile()
/// reads it (CompileOptions::capabilities): every (op, dtype) a target has no kernel for on its
/// device kind, the cost factors of the kernels it has, and which kinds fuse.
Capabilities backendCapabilities(const std::vector<BackendEntry> &backends = builtinBackends());

/// `options.capabilities` merged over backendCapabilities(backends) (Capabilities::merge: the
/// caller's gaps and factors on top), so that placement falls back or rejects where the targets
/// have no kernel instead of failing at run time: what build() and ferry-compile compile with.
void useBackendCapabilities(CompileOptions &options,
                            const std::vector<BackendEntry> &backends = builtinBackends());

/// The usual path: compile() with useBackendCapabilities(), then lower(). A rejected graph's error
/// carries every diagnostic of the compile; warnings of an accepted one go to `warnings` when
/// given.
Expected<Executable> build(Graph graph, CompileOptions options,
                           std::vector<Diagnostic> *warnings = nullptr,
                           const std::vector<BackendEntry> &backends = builtinBackends());

}  // namespace ferry
