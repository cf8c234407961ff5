// tests/runtime/small_mlp.h — a small MLP as `.fy` text, whose saved layout the artifact tests
// know byte by byte (examples/mlp.fy may change; this may not without those tests).
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <utility>

#include "passes/lower.h"
#include "ir/parser.h"
#include "runtime/executable.h"

namespace ferry {

inline constexpr std::string_view kSmallMlp = R"(graph mlp {
  input %x : f32[4,16] @cpu
  param %fc1.weight : f32[8,16] = randn(seed=1)
  param %fc1.bias : f32[8] = zeros
  param %fc2.weight : f32[3,8] = randn(seed=2)
  param %fc2.bias : f32[3] = zeros
  %h = linear(%x, %fc1.weight, %fc1.bias)
  %a = relu(%h)
  %logits = linear(%a, %fc2.weight, %fc2.bias)
  %probs = softmax(%logits, axis=-1)
  output %probs
}
)";

/// kSmallMlp compiled with the default options but fusion, so that each node is a step of its
/// own, which the tests edit by name (a test failure, and an empty executable, if it fails).
inline Executable compiledSmallMlp() {
  Expected<Graph> g = parseGraph(kSmallMlp, "mlp.fy");
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g) return Executable{};
  CompileOptions options;
  options.fusion = false;
  Expected<Executable> exe = build(std::move(g).value(), options);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe ? std::move(exe).value() : Executable{};
}

}  // namespace ferry
