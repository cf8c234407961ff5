// tests/runtime/readme_run_example_test.cpp — the README's "Running a model from your app"
// snippet, compiled (under -Werror, like the rest) and run, so the code a user copies works. The
// snippet is pasted below between markers, and a second test reads README.md and this file and
// fails on any difference between the README's block and the pasted lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/scratch.h"
#include "frontend/builder.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

constexpr const char *kBegin = "  // --- as in README.md ---";
constexpr const char *kEnd = "  // --- end ---";

Graph tinyModel() {
  Builder b("tiny");
  Var x = b.input("x", DType::F32, {4, 8});
  b.output("y", b.softmax(b.linear(x, b.param("w", DType::F32, {3, 8}, Init::randn(1)))));
  Expected<Graph> g = std::move(b).finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

// The snippet, between the markers exactly as README.md shows it, in a function that returns its
// errors. ReadmeRunExample.TheSnippetIsTheReadmesBlock keeps the two the same.
Status readmeSnippet(Graph graph, double &rowSum) {
  // --- as in README.md ---
  Expected<Executable> exe = build(std::move(graph), CompileOptions{});  // placement, dtypes, plan
  if (!exe) return exe.status();  // every diagnostic of the compile, each at its line
  if (Status saved = exe->save("model.ferry"); !saved.ok()) return saved;  // versioned, checksummed
  Expected<Executable> loaded = Executable::load("model.ferry");
  if (!loaded) return loaded.status();
  Expected<Session> s = Session::create(std::move(*loaded));  // weights uploaded once
  if (!s) return s.status();
  Expected<RunResult> r = s->run({{"x", TensorData::full(DType::F32, {4, 8}, 0.5)}});
  if (!r) return r.status();        // inputs are checked before anything runs
  const Tensor &y = *r->find("y");  // r->stats: time per step, transfers and bytes of this run
  // --- end ---
  rowSum = y.data().at(0) + y.data().at(1) + y.data().at(2);
  return Status();
}

std::vector<std::string> lines(const fs::path &file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The body of README.md's ```cpp block in the section `heading`: the lines after its first (the
// function's signature) up to the `  ...` that stands for the rest of the app.
std::vector<std::string> readmeBlock(const std::vector<std::string> &readme,
                                     const std::string &heading) {
  size_t i = 0;
  while (i < readme.size() && readme[i] != heading) ++i;
  while (i < readme.size() && readme[i] != "```cpp") ++i;
  std::vector<std::string> body;
  for (i += 2; i < readme.size() && readme[i] != "  ..." && readme[i] != "```"; ++i)
    body.push_back(readme[i]);
  return body;
}

// The lines of this file between the markers.
std::vector<std::string> pasted(const std::vector<std::string> &source) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string &line : source) {
    if (line == kEnd) break;
    if (in) out.push_back(line);
    in = in || line == kBegin;
  }
  return out;
}

TEST(ReadmeRunExample, TheSnippetIsTheReadmesBlock) {
  const fs::path root = FERRY_SOURCE_DIR;
  const std::vector<std::string> block =
      readmeBlock(lines(root / "README.md"), "## Running a model from your app");
  ASSERT_GE(block.size(), 5u) << "README.md's 'Running a model from your app' has a ```cpp block "
                                 "whose body ends with '  ...'";
  const std::vector<std::string> copy =
      pasted(lines(root / "tests/runtime/readme_run_example_test.cpp"));
  ASSERT_FALSE(copy.empty()) << "the markers are in this file";
  for (size_t i = 0; i < std::max(block.size(), copy.size()); ++i)
    EXPECT_EQ(i < copy.size() ? copy[i] : "<nothing>", i < block.size() ? block[i] : "<nothing>")
        << "line " << i + 1 << " of the snippet differs from README.md's";
}

TEST(ReadmeRunExample, CompilesSavesLoadsAndRuns) {
  const testutil::ScratchDir dir("readme_run_example");
  const fs::path before = fs::current_path();
  fs::current_path(dir.path());  // the snippet writes model.ferry where it runs
  double rowSum = 0;
  Status s = readmeSnippet(tinyModel(), rowSum);
  fs::current_path(before);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NEAR(rowSum, 1.0, 1e-5);
  EXPECT_TRUE(fs::exists(dir / "model.ferry"));
}

}  // namespace
}  // namespace ferry
