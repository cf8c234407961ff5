// tests/runtime/readme_run_example_test.cpp — the README's "Running a model from your app"
// snippet, compiled (under -Werror, like the rest) and run, so the code a user copies works.
#include <gtest/gtest.h>

#include <filesystem>

#include "frontend/builder.h"
#include "runtime/session.h"

namespace ferry {
namespace {

Graph tinyModel() {
  Builder b("tiny");
  Var x = b.input("x", DType::F32, {4, 8});
  b.output("y", b.softmax(b.linear(x, b.param("w", DType::F32, {3, 8}, Init::randn(1)))));
  Expected<Graph> g = std::move(b).finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

// The snippet, verbatim between the markers, in a function that returns its errors.
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

TEST(ReadmeRunExample, CompilesSavesLoadsAndRuns) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "readme_run_example";
  fs::create_directories(dir);
  const fs::path before = fs::current_path();
  fs::current_path(dir);  // the snippet writes model.ferry where it runs
  double rowSum = 0;
  Status s = readmeSnippet(tinyModel(), rowSum);
  fs::current_path(before);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NEAR(rowSum, 1.0, 1e-5);
  EXPECT_TRUE(fs::exists(dir / "model.ferry"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry
