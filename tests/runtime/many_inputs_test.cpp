// tests/runtime/many_inputs_test.cpp — a model with thousands of inputs: Session::run matches them
// by name in any order, rejects missing, unknown and repeated names with the messages of a small
// model, and its errors grow linearly with the inputs (how fast it matches is
// bench/scale_bench.cpp's to measure, not a test's).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "frontend/builder.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

constexpr int kInputs = 2000;

std::string inputName(int i) { return "x" + std::to_string(i); }

// x0 + x1 + ... + x{n-1}, each f32[2].
Session wideSession(int n) {
  Builder b("wide");
  Var sum = b.input(inputName(0), DType::F32, {2});
  for (int i = 1; i < n; ++i) sum = b.add(sum, b.input(inputName(i), DType::F32, {2}));
  b.output("y", sum);
  Expected<Graph> g = std::move(b).finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  Expected<Executable> exe = build(std::move(g).value(), CompileOptions{});
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  Session::Options options;
  options.checkPlan = true;
  Expected<Session> s = Session::create(std::move(exe).value(), options);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

// Input i holds {i, -2i}.
std::vector<NamedTensor> allInputs(int n) {
  std::vector<NamedTensor> in;
  for (int i = 0; i < n; ++i) {
    TensorData t(DType::F32, {2});
    t.set(0, i);
    t.set(1, -2.0 * i);
    in.push_back({inputName(i), Tensor(std::move(t))});
  }
  return in;
}

std::string messageOf(const Expected<RunResult> &r) {
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.status().message();
}

TEST(ManyInputs, MatchByNameInAnyOrder) {
  const Session s = wideSession(kInputs);
  std::vector<NamedTensor> in = allInputs(kInputs);
  std::shuffle(in.begin(), in.end(), std::mt19937(7));
  Expected<RunResult> r = s.run(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double sum = double(kInputs) * (kInputs - 1) / 2;
  EXPECT_EQ(r->outputs.at(0).tensor.data().at(0), sum);
  EXPECT_EQ(r->outputs.at(0).tensor.data().at(1), -2 * sum);
}

TEST(ManyInputs, MissingUnknownAndRepeatedNamesAreRejectedAsInASmallModel) {
  const Session s = wideSession(kInputs);
  std::vector<NamedTensor> in = allInputs(kInputs);
  std::reverse(in.begin(), in.end());

  std::vector<NamedTensor> missing = in;
  missing.erase(missing.begin() + 100);  // x1899
  EXPECT_EQ(messageOf(s.run(missing)), "error: input 'x1899' is missing [input]");

  std::vector<NamedTensor> twice = in;
  twice.push_back(twice[5]);  // x1994
  EXPECT_EQ(messageOf(s.run(twice)), "error: input 'x1994' is given twice [input]");

  std::vector<NamedTensor> unknown = in;
  unknown.push_back({"z", unknown[0].tensor});
  EXPECT_EQ(messageOf(s.run(unknown)),
            "error: unknown input 'z': the model's inputs are 'x0', 'x1', 'x2', 'x3', 'x4', 'x5', "
            "'x6', 'x7', 'x8', 'x9' and 1990 more [input]");

  // The session still runs afterwards.
  EXPECT_TRUE(s.run(in).ok());
}

// Every input given under a wrong name: one error per unknown name and one for the missing ones,
// each of a size that does not grow with the model (the list of the missing aside, which names
// each input once). Listing every input in every unknown-name error made them kInputs^2 long.
TEST(ManyInputs, ErrorsGrowLinearlyWithTheInputs) {
  const Session s = wideSession(kInputs);
  std::vector<NamedTensor> in = allInputs(kInputs);
  for (NamedTensor &t : in) t.name = "wrong_" + t.name;
  Expected<RunResult> r = s.run(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics().size(), size_t(kInputs) + 1);
  EXPECT_LT(r.status().message().size(), size_t(200) * kInputs);
  EXPECT_EQ(r.status().diagnostics().front().message,
            "unknown input 'wrong_x0': the model's inputs are 'x0', 'x1', 'x2', 'x3', 'x4', "
            "'x5', 'x6', 'x7', 'x8', 'x9' and 1990 more");
}

}  // namespace
}  // namespace ferry
