// tests/tools/tool_test_util.h — running a tool binary in tests: a scratch folder per test, the
// command run through the shell (in a given folder, with given variables) with stdout and stderr
// captured and the tool's own peak memory, the checks every usage error and every binary file
// given as a model must pass, and small text helpers.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/scratch.h"
#include "common/utf8_check.h"

namespace ferry::tooltest {

namespace fs = std::filesystem;

/// What a run of a tool gave: its exit status (-1 when it did not exit), its output, and the
/// largest resident set of its process (-1 when it could not be run).
struct Result {
  int exit = -1;
  std::string out;
  std::string err;
  long maxRssKiB = -1;
};

// Models shared by the tool tests.

// A weight pinned to cpu:1, an input on cpu and the output handed over on cpu:1: strict rejects
// it, auto moves the input to cpu:1 (one transfer per run; copying the weight to cpu instead,
// once at load, would leave the result to move, which is larger).
constexpr const char *kTwoDevices = R"(graph two {
  input %x : f32[4,8] @cpu
  param %w : f32[16,8] @cpu:1 = randn(seed=1)
  %h = linear(%x, %w)
  %y = relu(%h)
  output %y @cpu:1
}
)";

// f16 and f32 operands: linear rejects them under dtype=strict, promote inserts one cast.
constexpr const char *kMixedDTypes = R"(graph mixed {
  input %x : f16[4,8] @cpu
  param %w : f32[3,8] = randn(seed=3)
  %y = linear(%x, %w)
  output %y
}
)";

inline std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// How often `part` occurs in `s` (not overlapping).
inline size_t count(const std::string &s, std::string_view part) {
  size_t n = 0;
  for (size_t i = s.find(part); i != std::string::npos; i = s.find(part, i + part.size())) ++n;
  return n;
}

inline bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

/// The lines of `s` that contain `part` (all of them for "").
inline std::vector<std::string> linesWith(const std::string &s, std::string_view part) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (contains(line, part)) out.push_back(line);
  return out;
}

/// The lines of a DOT picture that contain `part`, the legend's (`legend_...`) left out.
inline std::vector<std::string> drawn(const std::string &dot, std::string_view part) {
  std::vector<std::string> out = linesWith(dot, part);
  std::erase_if(out, [](const std::string &line) { return contains(line, "legend_"); });
  return out;
}

/// Single quotes for the shell (paths of the temporary folder).
inline std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// How a tool is run: the variables it gets, and where.
struct RunOptions {
  /// Assignments for `env`, expanded by the shell ("FERRY_NUM_THREADS=abc"), or "".
  std::string env;
  fs::path workDir;  ///< the folder it runs in; empty: the test's own
};

/// Runs `binary` with `args` (already shell-quoted where needed) through the shell, in
/// `options.workDir`, its stdout and stderr captured through the files `scratch`/stdout and
/// `scratch`/stderr. The shell execs the tool (`exec env VAR=... TOOL ...`), so that the usage
/// wait4 reports, its peak memory included, is the tool's own and not the shell's, nor the
/// largest of all the children this process has waited for (RUSAGE_CHILDREN).
inline Result runCommand(const fs::path &scratch, const std::string &binary,
                         const std::string &args, const RunOptions &options = {}) {
  const std::string out = (scratch / "stdout").string(), err = (scratch / "stderr").string();
  const std::string cmd =
      (options.workDir.empty() ? "" : "cd " + shellQuote(options.workDir.string()) + " && ") +
      "exec " + (options.env.empty() ? "" : "env " + options.env + " ") + shellQuote(binary) + " " +
      args + " >" + shellQuote(out) + " 2>" + shellQuote(err);
  Result r;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char *>(nullptr));
    ::_exit(127);
  }
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return r;
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0)
    if (errno != EINTR) {
      ADD_FAILURE() << "wait4: " << std::strerror(errno);
      return r;
    }
  r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.maxRssKiB = usage.ru_maxrss;
  r.out = readFile(out);
  r.err = readFile(err);
  return r;
}

/// How `expectUsageError` matches the expected message against the line after "TOOL: error: ".
enum class Match {
  Contains,  ///< anywhere in the line
  Start,     ///< the line starts with it
  Whole,     ///< it is the whole line (without its newline)
};

/// 200,000 bytes of every value, no text: a binary file given as a model.
inline std::string binaryBlob() {
  std::string bytes;
  for (int i = 0; i < 200000; ++i) bytes += static_cast<char>((i * 7919 + i / 13) % 256);
  return bytes;
}

/// What `binary` (ferry-compile, ferry-run) writes for binaryBlob() given as its model: exit
/// status 1, nothing on stdout, at most 20 errors (kMaxErrorsShown), then a line that names the
/// tool and says how many more there were; every byte of stderr one a terminal shows as text
/// (control bytes and invalid UTF-8 written as \xNN).
inline void expectFewPrintableErrors(const Result &r, const std::string &binary) {
  const std::string tool = fs::path(binary).filename().string();
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count(r.err, ": error: "), 20u) << r.err.substr(0, 2000);
  EXPECT_LT(count(r.err, "\n"), 100u) << r.err.substr(0, 2000);
  EXPECT_LT(r.err.size(), 20000u);
  const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  EXPECT_TRUE(last.starts_with(tool + ": ") &&
              last.ends_with(" more diagnostics not shown (only the first 20 errors are)\n"))
      << r.err.substr(r.err.size() > 300 ? r.err.size() - 300 : 0);
  EXPECT_EQ(testutil::unprintable(r.err), "") << r.err.substr(0, 2000);
  EXPECT_TRUE(contains(r.err, "\\x")) << "raw bytes are written as \\xNN";
}

/// A fixture with a fresh scratch folder per test (`dir_`), removed afterwards.
class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    scratch_.emplace(std::string(info->test_suite_name()) + "." + info->name());
    dir_ = scratch_->path();
  }
  void TearDown() override { scratch_.reset(); }

  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  std::string write(const std::string &name, const std::string &text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return path(name);
  }

  /// Runs `binary` with `args` (already shell-quoted where needed) as runCommand does, its
  /// output captured in this test's folder.
  Result runTool(const std::string &binary, const std::string &args,
                 const RunOptions &options = {}) {
    return runCommand(dir_, binary, args, options);
  }

  /// Runs `binary` and checks that it gives a usage error: exit status 2, nothing on stdout,
  /// one line on stderr that starts with "TOOL: error: " (TOOL the binary's file name) and
  /// holds `message` as `match` says. Returns the run, for checks of its own.
  Result expectUsageError(const std::string &binary, const std::string &args,
                          const std::string &message, Match match = Match::Contains,
                          const RunOptions &options = {}) {
    SCOPED_TRACE(args);
    Result r = runTool(binary, args, options);
    const std::string prefix = fs::path(binary).filename().string() + ": error: ";
    EXPECT_EQ(r.exit, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
    EXPECT_TRUE(r.err.starts_with(prefix)) << r.err;
    switch (match) {
      case Match::Contains: EXPECT_TRUE(contains(r.err, message)) << r.err; break;
      case Match::Start: EXPECT_TRUE(r.err.starts_with(prefix + message)) << r.err; break;
      case Match::Whole: EXPECT_EQ(r.err, prefix + message + "\n"); break;
    }
    return r;
  }

  std::optional<testutil::ScratchDir> scratch_;
  fs::path dir_;
};

/// The fixture of ferry-compile's tests: `run` and `expectUsageError` run ferry-compile.
class FerryCompileTest : public ToolTest {
 protected:
  Result run(const std::string &args) { return runTool(FERRY_COMPILE, args); }

  using ToolTest::expectUsageError;
  Result expectUsageError(const std::string &args, const std::string &message,
                          Match match = Match::Contains, const RunOptions &options = {}) {
    return expectUsageError(FERRY_COMPILE, args, message, match, options);
  }
};

}  // namespace ferry::tooltest
