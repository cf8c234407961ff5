// tests/onnx/ops_test_util.h — what the converter tests (ops_shape_test, ops_nn_test) share:
// import a model expecting success or errors, run it on the reference interpreter and a cpu
// Session (which must agree), list the ferry ops it became.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "ir/verifier.h"
#include "onnx/onnx_model_util.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry::onnx_test {

inline Graph importOk(const Model &m, const OnnxImportOptions &o = {}) {
  Expected<Graph> g = m.import(o);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return Graph();
  EXPECT_TRUE(verify(*g).ok());
  return std::move(g).value();
}

/// The import's error messages with their locations, one a line; "" when it succeeds.
inline std::string importErrors(const Model &m) { return m.importErrors(); }

/// The outputs of a cpu Session, or none after a failure (reported).
inline std::vector<TensorData> runOnCpu(const Graph &g,
                                        const std::map<std::string, TensorData> &in) {
  Expected<Executable> exe = build(g, CompileOptions{});
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  if (!exe.ok()) return {};
  Expected<Session> s = Session::create(std::move(exe).value());
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  std::vector<NamedTensor> inputs;
  for (const auto &[name, t] : in) inputs.push_back({name, Tensor(t)});
  Expected<RunResult> r = s->run(inputs);
  EXPECT_TRUE(r.ok()) << r.status().message();
  std::vector<TensorData> out;
  if (r.ok())
    for (const auto &o : r->outputs) out.push_back(o.tensor.data());
  return out;
}

/// The reference interpreter's outputs, after checking that a cpu Session gives the same (types
/// equal, values within 1e-5 relative).
inline std::vector<TensorData> runOk(const Graph &g,
                                     const std::map<std::string, TensorData> &in = {}) {
  auto out = reference::run(g, in);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok()) return {};
  std::vector<TensorData> cpu = runOnCpu(g, in);
  EXPECT_EQ(cpu.size(), out->size());
  for (size_t i = 0; i < std::min(cpu.size(), out->size()); ++i) {
    const TensorData &want = (*out)[i];
    EXPECT_EQ(cpu[i].type().str(), want.type().str()) << "output " << i;
    if (cpu[i].type() != want.type()) continue;
    for (int64_t k = 0; k < want.numel(); ++k) {
      double a = cpu[i].at(k), b = want.at(k);
      if (a == b || (std::isnan(a) && std::isnan(b))) continue;
      EXPECT_NEAR(a, b, 1e-5 * (1 + std::abs(b))) << "output " << i << " element " << k;
    }
  }
  return std::move(out).value();
}

/// The `.fy` names of the graph's ops in order ("transpose matmul mul add").
inline std::string opsOf(const Graph &g) {
  std::string s;
  for (NodeId id : g.order()) s += (s.empty() ? "" : " ") + std::string(opInfo(g.node(id).op).name);
  return s;
}

/// Every element within `tol` (absolute and relative) of `want`, with the same type.
inline void expectNear(const TensorData &got, DType dtype, const Shape &shape,
                       const std::vector<double> &want, double tol = 1e-5) {
  ASSERT_EQ(got.type().str(), (TensorType{dtype, shape}.str()));
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got.at(static_cast<int64_t>(i)), want[i]) << "element " << i;
      continue;
    }
    EXPECT_NEAR(got.at(static_cast<int64_t>(i)), want[i], tol * (1 + std::abs(want[i])))
        << "element " << i;
  }
}

/// 0, 1, 2, ... of `shape` as f32.
inline TensorData iota(Shape shape) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return tensor(DType::F32, std::move(shape), v);
}

}  // namespace ferry::onnx_test
