// tests/alloc/alloc_count.h — heap allocations made by launches of prepared CPU kernels. Every
// heap allocation of the alloc_tests binary is counted (a replaced global operator new, in
// alloc_count_util.cpp); each step of a compiled model is launched once to warm up (the thread
// pool starts on first use), then again while counting. failAllocation makes one allocation throw
// std::bad_alloc (the fault sweep, fault_sweep_test.cpp).
#pragma once

#include <map>
#include <string>

#include "passes/compile.h"

namespace ferry::alloctest {

/// Heap allocations (global operator new, every thread) since the process started.
long allocationCount();

/// Arms a fault: the `n`th allocation from now (1: the next), on whichever thread makes it,
/// throws std::bad_alloc. It fires once; the count runs over every thread, so that an
/// allocation on a kernel pool's worker fails too (it must not: kernels allocate nothing).
void failAllocation(long n);

/// Disarms the fault; whether it had fired.
bool disarmFailure();

/// Heap allocations per op of `model` (a path under the source tree) compiled with `options`,
/// counted over a second launch of every step (transfers aside: they are the runtime's copies,
/// not kernels).
std::map<std::string, long> allocationsPerOp(const std::string &model, CompileOptions options);

/// Heap allocations of one Session::run of `model` compiled with `options`, after a first run
/// (inputs made once, zeros); the executable's output count into `outputs`.
long allocationsPerRun(const std::string &model, CompileOptions options, long *outputs);

/// "op=n op=n ..." for failure messages.
std::string str(const std::map<std::string, long> &perOp);

}  // namespace ferry::alloctest
