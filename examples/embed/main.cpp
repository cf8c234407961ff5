// examples/embed/main.cpp — build a model with the builder, check it, run it on the host.
#include <ferry/ferry.h>

#include <cstdio>

using namespace ferry;

int main() {
  Builder b("embed_mlp");
  Var x = b.input("x", DType::F32, {4, 8});
  Var w1 = b.param("fc1.weight", DType::F32, {16, 8}, Init::randn(1));
  Var w2 = b.param("fc2.weight", DType::F32, {3, 16}, Init::randn(2));
  Var y = b.softmax(b.linear(b.relu(b.linear(x, w1)), w2));
  b.output("y", y);

  Expected<Graph> g = std::move(b).finish();
  if (!g) {
    std::fprintf(stderr, "%s\n", g.status().message().c_str());
    return 1;
  }
  std::printf("%s", printGraph(*g, {.locations = false}).c_str());

  auto out = reference::run(*g, {{"x", TensorData::full(DType::F32, {4, 8}, 0.5)}});
  if (!out) {
    std::fprintf(stderr, "%s\n", out.status().message().c_str());
    return 1;
  }
  double rowSum = 0;
  for (int j = 0; j < 3; ++j) rowSum += (*out)[0].at(j);
  std::printf("y[0] sums to %.6f\n", rowSum);
  return rowSum > 0.999 && rowSum < 1.001 ? 0 : 1;
}
