// bench/triad_bench.cpp — ferry-bench-triad: the STREAM triad a[i] = b[i] + s * c[i] over f32
// arrays, on ferry's CPU thread pool: the memory bandwidth the machine gives ferry's kernels, the
// yardstick of bench/peer/peer.py's elementwise chain (which reads one array and writes one).
//
//   ferry-bench-triad [--elements 16777216] [--passes 20]
//
// Each pass is one parallelFor over the arrays, split in one range per pool thread (as an
// elementwise kernel splits its loop), timed on its own after one untimed pass; the arrays are
// first touched by the same split, so that each thread's pages are where it runs. Bytes per pass:
// 12 per element (two f32 reads, one write; the write-allocate read of `a` not counted, as
// STREAM counts). Threads: FERRY_NUM_THREADS (the core count when unset), one range each.
//
// Output, one JSON line: {"elements", "threads", "passes", "median_ms", "min_ms", "gb_per_s"
// (median pass, 1e9 bytes), "best_gb_per_s", "times_ms": [...]}; then a check that every a[i]
// is what it should be (exit 1 if not: a vectoriser or split bug would show as a fast wrong loop).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/num_threads.h"
#include "backends/cpu/parallel.h"

namespace {

using Clock = std::chrono::steady_clock;

struct FreeDeleter {
  void operator()(float *p) const { std::free(p); }
};
using Array = std::unique_ptr<float[], FreeDeleter>;

Array allocate(int64_t n) {
  const size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;  // aligned_alloc's rule
  return Array(static_cast<float *>(std::aligned_alloc(64, bytes)));
}

void triad(float *__restrict a, const float *__restrict b, const float *__restrict c, float s,
           int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

int run(int64_t n, int passes) {
  Array a = allocate(n), b = allocate(n), c = allocate(n);
  if (!a || !b || !c) {
    std::cerr << "ferry-bench-triad: cannot allocate 3 x " << n << " floats\n";
    return 1;
  }
  // FERRY_NUM_THREADS as the kernels' pool reads it; not poolThreads(), which counts a pool of at
  // least one thread plus the caller, so 2 when 1 is asked for.
  std::string warning;
  const int threads = ferry::cpu::resolveNumThreads(std::getenv(ferry::cpu::kNumThreadsEnv),
                                                    std::thread::hardware_concurrency(), warning);
  const int64_t grain = (n + threads - 1) / threads;  // one range per thread
  float *pa = a.get(), *pb = b.get(), *pc = c.get();
  ferry::cpu::parallelFor(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pa[i] = 0.0f;
      pb[i] = float(i % 1000);
      pc[i] = float(i % 7);
    }
  });
  const float s = 3.0f;
  auto pass = [&] {
    ferry::cpu::parallelFor(n, grain,
                            [&](int64_t begin, int64_t end) { triad(pa, pb, pc, s, begin, end); });
  };
  pass();
  std::vector<double> times;
  for (int p = 0; p < passes; ++p) {
    const Clock::time_point start = Clock::now();
    pass();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  for (int64_t i = 0; i < n; ++i)
    if (pa[i] != float(i % 1000) + s * float(i % 7)) {
      std::cerr << "ferry-bench-triad: a[" << i << "] is " << pa[i] << ", expected "
                << float(i % 1000) + s * float(i % 7) << "\n";
      return 1;
    }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const size_t k = sorted.size();
  const double median = k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
  const double bytes = 12.0 * double(n);
  std::ostringstream json;
  json.precision(6);
  json << "{\"elements\": " << n << ", \"threads\": " << threads << ", \"passes\": " << passes
       << ", \"median_ms\": " << median << ", \"min_ms\": " << sorted.front()
       << ", \"gb_per_s\": " << bytes / (median * 1e6)
       << ", \"best_gb_per_s\": " << bytes / (sorted.front() * 1e6) << ", \"times_ms\": [";
  for (size_t i = 0; i < k; ++i) json << (i ? ", " : "") << times[i];
  json << "]}\n";
  std::cout << json.str();
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  int64_t elements = int64_t(1) << 24;
  int passes = 20;
  CLI::App app{
      "ferry-bench-triad: STREAM triad a = b + s*c over f32 arrays on ferry's thread pool"};
  app.add_option("--elements", elements, "array length (default 16777216)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 32));
  app.add_option("--passes", passes, "timed passes (default 20)")->check(CLI::Range(1, 100000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  return run(elements, passes);
}
