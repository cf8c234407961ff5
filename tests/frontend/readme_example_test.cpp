// tests/frontend/readme_example_test.cpp — the README's builder example, compiled and checked,
// so the first code a user copies keeps working.
#include <gtest/gtest.h>

#include <cstdio>

#include "frontend/builder.h"

namespace ferry {
namespace {

TEST(ReadmeExample, BuildsTheMlpOfTheReadme) {
  // --- as in README.md ---
  Builder b("mlp");
  Var x = b.input("x", DType::F32, {32, 784});  // arrives on cpu
  Var w1 = b.param("fc1.weight", DType::F32, {256, 784}, Init::randn(1));
  Var b1 = b.param("fc1.bias", DType::F32, {256}, Init::zeros());
  Var w2 = b.param("fc2.weight", DType::F32, {10, 256}, Init::randn(2));
  Var h = b.relu(b.linear(x, w1, b1));
  {
    auto on = b.on(Device::cuda(0));  // nodes created in this scope are pinned to cuda:0
    h = b.linear(h, w2);
  }
  b.output("probs", b.softmax(h));
  Expected<Graph> g = std::move(b).finish();  // all errors at once, each at your line
  if (!g) std::fprintf(stderr, "%s\n", g.status().message().c_str());
  // --- end ---
  ASSERT_TRUE(g.ok());
  const Value &probs = g->value(*g->findValue("probs"));
  EXPECT_EQ(probs.type, (TensorType{DType::F32, {32, 10}}));
  int pinned = 0;
  for (NodeId id : g->order())
    if (g->node(id).pinDevice == Device::cuda(0)) ++pinned;
  EXPECT_EQ(pinned, 1);  // only the second linear
}

}  // namespace
}  // namespace ferry
