// backends/cpu/num_threads.cpp — FERRY_NUM_THREADS, parsed and checked.
#include "backends/cpu/num_threads.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace ferry::cpu {

Expected<int> parseNumThreads(std::string_view value) {
  int n = 0;
  const bool digits = !value.empty() && std::all_of(value.begin(), value.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (!digits || ec != std::errc() || end != value.data() + value.size() || n < 1 ||
      n > kMaxNumThreads)
    return makeError("environment", std::string(kNumThreadsEnv) +
                                        ": expected a whole number of threads from 1 to " +
                                        std::to_string(kMaxNumThreads) + ", got '" +
                                        std::string(value) + "'");
  return n;
}

Status checkNumThreadsEnv() {
  const char *value = std::getenv(kNumThreadsEnv);
  if (!value || !*value) return Status();
  Expected<int> n = parseNumThreads(value);
  return n ? Status() : n.status();
}

int resolveNumThreads(const char *value, unsigned cores, std::string &warning) {
  warning.clear();
  const int fallback = static_cast<int>(std::clamp<unsigned>(cores, 1, kMaxNumThreads));
  if (!value || !*value) return fallback;
  Expected<int> n = parseNumThreads(value);
  if (n) return *n;
  warning = n.status().diagnostics().front().message + "; ignored, using the core count (" +
            std::to_string(fallback) + (fallback == 1 ? " thread)" : " threads)");
  return fallback;
}

}  // namespace ferry::cpu
