// examples/embed/main.cpp — the whole app path: build a model, compile, save, load, run.
#include <ferry/ferry.h>

#include <cstdio>

using namespace ferry;

int fail(const Status &s) { return std::fprintf(stderr, "%s\n", s.message().c_str()), 1; }

int main() {
  Builder b("embed_mlp");
  Var x = b.input("x", DType::F32, {4, 8});
  Var w1 = b.param("fc1.weight", DType::F32, {16, 8}, Init::randn(1));
  Var w2 = b.param("fc2.weight", DType::F32, {3, 16}, Init::randn(2));
  b.output("y", b.softmax(b.linear(b.relu(b.linear(x, w1)), w2)));
  Expected<Graph> g = std::move(b).finish();
  if (!g) return fail(g.status());
  std::printf("%s", printGraph(*g, {.locations = false}).c_str());

  Expected<Executable> exe = build(std::move(*g), CompileOptions{});  // placement, dtypes, plan
  if (!exe) return fail(exe.status());
  if (Status s = exe->save("embed_mlp.ferry"); !s.ok()) return fail(s);

  Expected<Executable> loaded = Executable::load("embed_mlp.ferry");
  if (!loaded) return fail(loaded.status());
  Expected<Session> session = Session::create(std::move(*loaded));  // weights uploaded once
  if (!session) return fail(session.status());
  Expected<RunResult> out = session->run({{"x", TensorData::full(DType::F32, {4, 8}, 0.5)}});
  if (!out) return fail(out.status());

  const Tensor &y = *out->find("y");
  double rowSum = y.data().at(0) + y.data().at(1) + y.data().at(2);
  std::printf("y: %s, y[0] sums to %.6f in %.3f ms\n", y.str().c_str(), rowSum,
              out->stats.seconds * 1e3);
  return rowSum > 0.999 && rowSum < 1.001 ? 0 : 1;
}
