// backends/cpu/num_threads.h — how many threads the CPU kernels use: FERRY_NUM_THREADS when it
// holds a valid count, else the core count.
//
// An environment variable is user input, so a bad value never aborts an app: the thread pool
// (backends/cpu/parallel.cpp) ignores it with one warning on stderr and uses the core count.
// A tool that would rather refuse it up front calls checkNumThreadsEnv() (ferry-run exits 2).
#pragma once

#include <string>
#include <string_view>

#include "ir/status.h"

namespace ferry::cpu {

/// The variable's name.
inline constexpr const char *kNumThreadsEnv = "FERRY_NUM_THREADS";
/// The most threads FERRY_NUM_THREADS may ask for.
inline constexpr int kMaxNumThreads = 1024;

/// A FERRY_NUM_THREADS value: decimal digits only, 1 to kMaxNumThreads. Anything else ("abc",
/// "0", "-1", "2000", " 4") is an error naming the variable, what it expects and what came.
Expected<int> parseNumThreads(std::string_view value);

/// The environment's FERRY_NUM_THREADS: unset or empty is fine (the core count), any other
/// value must parse.
Status checkNumThreadsEnv();

/// The pool's size for a FERRY_NUM_THREADS value (nullptr or "" when unset) on a machine with
/// `cores` cores (0 when unknown): the value when it parses, else the core count (at least 1),
/// with `warning` saying why the value was ignored.
int resolveNumThreads(const char *value, unsigned cores, std::string &warning);

}  // namespace ferry::cpu
