// bench/soak.cpp — one Session run from several threads for minutes, with valid and invalid inputs
// at random: every valid run must give its input's expected output, every invalid input must be
// rejected with an error, and the resident memory must stay flat.
//
//   ferry-bench-soak [--minutes 10] [--threads 4] [--report-seconds 30] [--model examples/mlp.fy]
//
// The model is compiled in-process. A pool of 16 inputs (seeded randn, one of them with NaNs:
// valid, it must run) has its outputs computed once, before the threads start, by one run each,
// checked against the reference interpreter; during the soak every valid run must return those
// bytes exactly (the kernels' results do not depend on the thread count). One iteration in four is
// invalid: a wrong shape, a wrong dtype, an unknown name, a missing input or an input given
// twice, each of which Session::run must refuse with an error of code "input".
//
// Every --report-seconds it prints: elapsed seconds, runs, valid runs that were right, invalid
// ones rejected, failures, and the resident set (/proc/self/statm). Warm-up ends after the first
// minute (or a quarter of a shorter run). It exits 1 if any valid run was wrong or failed, any
// invalid input was accepted, or the resident set grew by more than 10% + 8 MB from the end of
// the warm-up to the end.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/reference/interpreter.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPool = 16;
constexpr double kRssGrowth = 0.10;
constexpr long kRssSlackKb = 8 * 1024;

long residentKb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::string bytesOf(const RunResult &r) {
  std::string bytes;
  for (const NamedTensor &o : r.outputs)
    bytes.append(reinterpret_cast<const char *>(o.tensor.bytes().data()), o.tensor.byteSize());
  return bytes;
}

// Whether `got` matches the reference's outputs to a float tolerance (NaN where it has NaN).
bool closeToReference(const RunResult &got, const std::vector<TensorData> &want) {
  if (got.outputs.size() != want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::vector<double> a = got.outputs[i].tensor.data().toDoubles();
    const std::vector<double> b = want[i].toDoubles();
    if (a.size() != b.size()) return false;
    for (size_t j = 0; j < a.size(); ++j)
      if (std::isnan(a[j]) != std::isnan(b[j]) ||
          (!std::isnan(b[j]) && std::abs(a[j] - b[j]) > 1e-4 + 1e-4 * std::abs(b[j])))
        return false;
  }
  return true;
}

struct Counters {
  std::atomic<long> runs{0}, validOk{0}, invalidRejected{0}, failures{0};
};

enum class Invalid { Shape, DType, UnknownName, Missing, Duplicate, kCount };

const char *describe(Invalid k) {
  switch (k) {
    case Invalid::Shape: return "a wrong shape";
    case Invalid::DType: return "a wrong dtype";
    case Invalid::UnknownName: return "an unknown name";
    case Invalid::Missing: return "a missing input";
    case Invalid::Duplicate: return "an input given twice";
    case Invalid::kCount: break;
  }
  return "?";
}

// The valid inputs of pool entry `i`, every input of the model from one seed; entry kPool - 1 has
// NaNs in its first input.
std::vector<NamedTensor> validInputs(const Executable &exe, int i) {
  std::vector<NamedTensor> inputs;
  for (int32_t s : exe.inputs) {
    const Slot &slot = exe.slots[static_cast<size_t>(s)];
    TensorData data = TensorData::randn(slot.type.dtype, slot.type.shape, 1000 + i);
    if (i == kPool - 1 && inputs.empty() && slot.type.dtype == DType::F32) {
      auto *f = reinterpret_cast<float *>(data.mutableBytes().data());
      for (size_t j = 0; j < data.byteSize() / sizeof(float); j += 7)
        f[j] = std::numeric_limits<float>::quiet_NaN();
    }
    inputs.push_back({slot.name, Tensor(std::move(data))});
  }
  return inputs;
}

// `valid` made wrong in the way `kind` says.
std::vector<NamedTensor> invalidInputs(const std::vector<NamedTensor> &valid, Invalid kind) {
  std::vector<NamedTensor> inputs = valid;
  NamedTensor &first = inputs.front();
  switch (kind) {
    case Invalid::Shape: {
      Shape shape = first.tensor.shape();
      shape.front() += 1;
      first.tensor = Tensor::zeros(first.tensor.dtype(), shape);
      break;
    }
    case Invalid::DType:
      first.tensor = Tensor::zeros(first.tensor.dtype() == DType::F64 ? DType::F32 : DType::F64,
                                   first.tensor.shape());
      break;
    case Invalid::UnknownName: inputs.push_back({"no_such_input", first.tensor}); break;
    case Invalid::Missing: inputs.erase(inputs.begin()); break;
    case Invalid::Duplicate: inputs.push_back(first); break;
    case Invalid::kCount: break;
  }
  return inputs;
}

int soak(const std::string &model, double minutes, int threads, double reportSeconds) {
  Expected<Graph> graph = parseFile(model);
  if (!graph) {
    std::fprintf(stderr, "%s\n", graph.status().message().c_str());
    return 2;
  }
  const Graph reference = *graph;
  Expected<Executable> exe = build(std::move(*graph), CompileOptions{});
  if (!exe) {
    std::fprintf(stderr, "%s\n", exe.status().message().c_str());
    return 2;
  }
  Expected<Session> session = Session::create(std::move(*exe));
  if (!session) {
    std::fprintf(stderr, "%s\n", session.status().message().c_str());
    return 2;
  }
  const Executable &plan = session->executable();

  // The pool: inputs and their outputs, each output checked against the reference interpreter.
  std::vector<std::vector<NamedTensor>> inputs;
  std::vector<std::string> expected;
  for (int i = 0; i < kPool; ++i) {
    inputs.push_back(validInputs(plan, i));
    Expected<RunResult> r = session->run(inputs.back());
    std::map<std::string, TensorData> byName;
    for (const NamedTensor &in : inputs.back()) byName.emplace(in.name, in.tensor.data());
    Expected<std::vector<TensorData>> want = reference::run(reference, byName);
    if (!r || !want || !closeToReference(*r, *want)) {
      std::fprintf(stderr, "input %d: the session's output differs from the reference's%s%s\n", i,
                   r ? "" : (": " + r.status().message()).c_str(),
                   want ? "" : (": " + want.status().message()).c_str());
      return 2;
    }
    expected.push_back(bytesOf(*r));
  }

  Counters c;
  std::mutex logMutex;
  auto fail = [&](const std::string &what) {
    c.failures.fetch_add(1);
    std::lock_guard<std::mutex> lock(logMutex);
    std::fprintf(stderr, "FAILURE: %s\n", what.c_str());
  };
  const auto duration = std::chrono::duration<double>(minutes * 60);
  const Clock::time_point start = Clock::now();
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(42 + static_cast<uint64_t>(t));
      while (!stop.load(std::memory_order_relaxed)) {
        const int i = static_cast<int>(rng() % kPool);
        c.runs.fetch_add(1, std::memory_order_relaxed);
        if (rng() % 4 != 0) {
          Expected<RunResult> r = session->run(inputs[static_cast<size_t>(i)]);
          if (!r)
            fail("valid input " + std::to_string(i) + " was rejected: " + r.status().message());
          else if (bytesOf(*r) != expected[static_cast<size_t>(i)])
            fail("valid input " + std::to_string(i) + " gave a wrong output");
          else
            c.validOk.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const auto kind = static_cast<Invalid>(rng() % static_cast<int>(Invalid::kCount));
        Expected<RunResult> r = session->run(invalidInputs(inputs[static_cast<size_t>(i)], kind));
        if (r.ok())
          fail(std::string("an input with ") + describe(kind) + " was accepted");
        else if (r.status().diagnostics().front().code != "input")
          fail(std::string("an input with ") + describe(kind) +
               " gave a non-input error: " + r.status().message());
        else
          c.invalidRejected.fetch_add(1, std::memory_order_relaxed);
      }
    });

  const long rssStart = residentKb();
  const double warmup = std::min(60.0, duration.count() / 4);
  long rssWarm = -1, rssMax = rssStart;
  std::printf("%8s %10s %10s %10s %8s %10s\n", "seconds", "runs", "valid ok", "rejected",
              "failures", "rss kB");
  auto report = [&](double elapsed, long rss) {
    std::printf("%8.0f %10ld %10ld %10ld %8ld %10ld\n", elapsed, c.runs.load(), c.validOk.load(),
                c.invalidRejected.load(), c.failures.load(), rss);
    std::fflush(stdout);
  };
  double nextReport = reportSeconds;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const long rss = residentKb();
    rssMax = std::max(rssMax, rss);
    if (rssWarm < 0 && elapsed >= warmup) rssWarm = rss;
    if (elapsed >= duration.count()) break;
    if (elapsed >= nextReport) {
      report(elapsed, rss);
      nextReport += reportSeconds;
    }
  }
  stop = true;
  for (std::thread &w : workers) w.join();
  const long rssEnd = residentKb();
  rssMax = std::max(rssMax, rssEnd);
  if (rssWarm < 0) rssWarm = rssEnd;
  report(std::chrono::duration<double>(Clock::now() - start).count(), rssEnd);
  const long rssLimit =
      static_cast<long>(static_cast<double>(rssWarm) * (1 + kRssGrowth)) + kRssSlackKb;
  std::printf("threads %d, %.1f minutes: %ld runs, %ld valid ok, %ld invalid rejected, %ld "
              "failures; rss kB: start %ld, after warm-up (%.0f s) %ld, end %ld, max %ld "
              "(limit %ld)\n",
              threads, minutes, c.runs.load(), c.validOk.load(), c.invalidRejected.load(),
              c.failures.load(), rssStart, warmup, rssWarm, rssEnd, rssMax, rssLimit);
  bool ok = c.failures.load() == 0;
  if (rssEnd > rssLimit) {
    std::printf("FAILURE: the resident set grew from %ld kB to %ld kB\n", rssWarm, rssEnd);
    ok = false;
  }
  if (c.validOk.load() == 0 || c.invalidRejected.load() == 0) {
    std::printf("FAILURE: no valid or no invalid run was done\n");
    ok = false;
  }
  std::printf("%s\n", ok ? "soak: ok" : "soak: FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace ferry

int main(int argc, char **argv) {
  CLI::App app{"Runs one Session from several threads with random valid and invalid inputs; "
               "exits 1 on a wrong output, an accepted invalid input or resident memory that grew"};
  double minutes = 10, reportSeconds = 30;
  int threads = 4;
  std::string model = std::string(FERRY_SOURCE_DIR) + "/examples/mlp.fy";
  app.add_option("--minutes", minutes, "How long to run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "Threads calling Session::run")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--report-seconds", reportSeconds, "Print the counters this often")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--model", model, "The .fy model to run")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return ferry::soak(model, minutes, threads, reportSeconds);
}
