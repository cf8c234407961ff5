// tests/tools/readme_test.cpp — the README's ferry-compile sessions are what the tool prints today.
//
// Each ```console block of README.md holds `$ ferry-compile ARGS` lines, each followed by what the
// command prints (stdout, then stderr). The test runs every command from the repository root and
// compares, line for line; the one line that varies from run to run, `pass times:` of --stats, is
// compared up to its first number and from its final parenthesis.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tool_test_util.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using tooltest::contains;
using tooltest::readFile;

struct Session {
  std::string args;      ///< after `$ ferry-compile`
  std::string expected;  ///< the lines after it
};

std::vector<Session> consoleSessions(const std::string &readme) {
  std::vector<Session> out;
  std::istringstream in(readme);
  bool inConsole = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) {
      inConsole = !inConsole && line == "```console";
      continue;
    }
    if (!inConsole) continue;
    if (line.starts_with("$ ")) {
      EXPECT_TRUE(line.starts_with("$ ferry-compile "))
          << "a console block runs ferry-compile: " << line;
      out.push_back({line.substr(std::string("$ ferry-compile ").size()), ""});
    } else if (!out.empty()) {
      out.back().expected += line + "\n";
    }
  }
  return out;
}

// `line` up to its first digit and from its last " (": the run-dependent middle left out.
std::string withoutTimes(const std::string &line) {
  if (!contains(line, "pass times: ")) return line;
  return line.substr(0, line.find_first_of("0123456789")) + "..." + line.substr(line.rfind(" ("));
}

std::string maskTimes(const std::string &text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += withoutTimes(line) + "\n";
  return out;
}

class Readme : public tooltest::ToolTest {};

// ferry-compile writes standard output before stderr (its report comes last), so the two read
// one after the other as a terminal shows them.
TEST_F(Readme, FerryCompileSessionsAreWhatTheToolPrints) {
  const fs::path root = FERRY_SOURCE_DIR;
  const std::vector<Session> sessions = consoleSessions(readFile(root / "README.md"));
  ASSERT_GE(sessions.size(), 5u) << "README.md's ferry-compile section shows its sessions";
  for (const Session &s : sessions) {
    const tooltest::Result r = runTool(FERRY_COMPILE, s.args, {.workDir = root});
    ASSERT_NE(r.exit, -1) << s.args;
    const std::string printed = r.out + r.err;
    EXPECT_EQ(maskTimes(printed), maskTimes(s.expected))
        << "README.md shows for `ferry-compile " << s.args << "` what the tool no longer prints:\n"
        << printed;
  }
}

}  // namespace
}  // namespace ferry
