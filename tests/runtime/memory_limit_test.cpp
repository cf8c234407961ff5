// tests/runtime/memory_limit_test.cpp — Session::run under a real memory limit: an address-space
// limit (setrlimit RLIMIT_AS) that leaves no room for an output is a "memory" error naming it,
// and the Session runs again once there is room. In a child process of its own (a gtest death
// test, re-executed: a fork would lose the kernel pool's threads), since the limit is the
// process's.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// The sanitizers reserve terabytes of address space. GCC says so with __SANITIZE_*__, clang only
// through __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FERRY_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FERRY_SANITIZED 1
#endif
#endif
#ifdef FERRY_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// 64 MiB out of 4 input bytes, written where the caller receives it: each run allocates 64 MiB
// for the output it returns, unless it reuses the storage of one the caller released.
constexpr std::string_view kBigOutput = R"(graph g {
  input %x : f32[1] @cpu
  %y = expand(%x, shape=[16777216])
  output %y
}
)";

size_t addressSpaceBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// The child's part: exits 0 when every check held, else 1 after saying which failed.
[[noreturn]] void runUnderALimit() {
  auto fail = [](const std::string &why) {
    std::fprintf(stderr, "FAILED: %s\n", why.c_str());
    std::exit(1);
  };
  Expected<Graph> g = parseGraph(kBigOutput, "g.fy");
  if (!g) fail(g.status().message());
  Expected<Executable> exe = build(std::move(*g), CompileOptions{});
  if (!exe) fail(exe.status().message());
  Expected<Session> session = Session::create(std::move(*exe));
  if (!session) fail(session.status().message());
  const std::vector<NamedTensor> inputs{{"x", Tensor(TensorData::full(DType::F32, {1}, 2.5))}};
  // Held: a released output's storage would be reused by the next run, which then allocates
  // nothing (the session's output cache).
  Expected<RunResult> first = session->run(inputs);
  if (!first) fail("first run: " + first.status().message());

  rlimit old{};
  getrlimit(RLIMIT_AS, &old);
  rlimit limited = old;
  limited.rlim_cur = addressSpaceBytes() + (32 << 20);  // room for small things, not the output
  if (setrlimit(RLIMIT_AS, &limited) != 0) fail("setrlimit failed");
  Expected<RunResult> r = session->run(inputs);
  if (r.ok()) fail("the run under the limit succeeded");
  std::fprintf(stderr, "%s [%s]\n", r.status().message().c_str(),
               r.status().diagnostics().front().code.c_str());
  if (setrlimit(RLIMIT_AS, &old) != 0) fail("restoring the limit failed");

  Expected<RunResult> again = session->run(inputs);
  if (!again) fail("the run after the limit was lifted: " + again.status().message());
  const std::vector<double> y = again->outputs.at(0).tensor.data().toDoubles();
  if (y.size() != 16777216 || y.front() != 2.5 || y.back() != 2.5) fail("wrong output after");
  std::exit(0);
}

TEST(MemoryLimit, AnOutputTheLimitLeavesNoRoomForIsAnErrorAndTheSessionRunsAfter) {
  if (kSanitized) GTEST_SKIP() << "under a sanitizer the address space cannot be limited usefully";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(runUnderALimit(), testing::ExitedWithCode(0),
              "error: out of memory: run of 'g': output 'y' \\(f32\\[16777216\\]\\) needs "
              "67108864 bytes, which the host could not allocate \\[memory\\]");
}

}  // namespace
}  // namespace ferry
