// tests/tools/tool_test_util.h — running a tool binary in tests: a scratch folder per test, the
// command run through the shell (in a given folder, with given variables) with stdout and stderr
// captured, and small text helpers.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace ferry::tooltest {

namespace fs = std::filesystem;

/// What a run of a tool gave: its exit status (-1 when it did not exit) and its output.
struct Result {
  int exit = -1;
  std::string out;
  std::string err;
};

// Models shared by the tool tests.

// A weight pinned to cpu:1 and an input on cpu: strict rejects it, auto inserts one transfer.
constexpr const char *kTwoDevices = R"(graph two {
  input %x : f32[4,8] @cpu
  param %w : f32[16,8] @cpu:1 = randn(seed=1)
  %h = linear(%x, %w)
  %y = relu(%h)
  output %y
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

/// Single quotes for the shell (paths of the temporary folder).
inline std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// How a tool is run: what goes before it on the shell's command line, and where.
struct RunOptions {
  std::string env;   ///< variable assignments for the shell ("FERRY_NUM_THREADS=abc"), or ""
  fs::path workDir;  ///< the folder it runs in; empty: the test's own
};

/// Runs `binary` with `args` (already shell-quoted where needed) through the shell, in
/// `options.workDir`, its stdout and stderr captured through the files `scratch`/stdout and
/// `scratch`/stderr.
inline Result runCommand(const fs::path &scratch, const std::string &binary,
                         const std::string &args, const RunOptions &options = {}) {
  const std::string out = (scratch / "stdout").string(), err = (scratch / "stderr").string();
  const std::string cmd =
      (options.workDir.empty() ? "" : "cd " + shellQuote(options.workDir.string()) + " && ") +
      (options.env.empty() ? "" : options.env + " ") + shellQuote(binary) + " " + args + " >" +
      shellQuote(out) + " 2>" + shellQuote(err);
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = readFile(out);
  r.err = readFile(err);
  return r;
}

/// A fixture with a fresh scratch folder per test, removed afterwards.
class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string(info->test_suite_name()) + "." +
                                        std::to_string(::getpid()) + "." + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

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

  fs::path dir_;
};

}  // namespace ferry::tooltest
