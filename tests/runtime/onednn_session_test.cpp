// tests/runtime/onednn_session_test.cpp — a small CNN and an attention-style block through a
// Session whose f32 conv2d, linear and matmul take oneDNN (backends/cpu/onednn_*.h): fused
// anchors, folded batch norms and packed weights included, the outputs agree with the reference
// interpreter's; and with oneDNN switched off (FERRY_CPU_GEMM=openblas's switch) they agree too.
#include <gtest/gtest.h>

#include <cmath>
#include <string_view>

#include "backends/cpu/onednn_gemm.h"
#include "backends/reference/interpreter.h"
#include "common/parse.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// Batch 2 (one image per pool thread on 2 cores), convolutions wide enough for oneDNN (16 and 32
// channels), a batch norm folded into its conv, a residual add, a linear over 32 rows and a
// matmul by a weight.
constexpr std::string_view kNet = R"(graph net {
  input %x : f32[2,16,12,12]
  param %w1 : f32[32,16,3,3] = randn(seed=1)
  param %b1 : f32[32] = randn(seed=2)
  param %w2 : f32[32,32,3,3] = randn(seed=3)
  param %mean : f32[32] = randn(seed=4)
  param %var : f32[32] = ones
  param %gamma : f32[32] = randn(seed=5)
  param %beta : f32[32] = randn(seed=6)
  param %fc : f32[64,144] = randn(seed=7)
  param %m : f32[64,48] = randn(seed=8)
  %c1 = conv2d(%x, %w1, %b1, padding=[1,1])
  %r1 = relu(%c1)
  %c2 = conv2d(%r1, %w2, padding=[1,1])
  %n2 = batch_norm(%c2, %gamma, %beta, %mean, %var)
  %s = add(%n2, %r1)
  %r2 = relu(%s)
  %f = reshape(%r2, shape=[64,144])
  %l = linear(%f, %fc)
  %y = matmul(%l, %m)
  output %y
})";

void expectAgreesWithTheReference(const Session &s, const TensorData &x, const TensorData &want) {
  Expected<RunResult> r = s.run({{"x", Tensor(x)}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TensorData &got = r->outputs[0].tensor.data();
  ASSERT_EQ(got.type(), want.type());
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.at(i)));
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.at(i), want.at(i), 1e-4 * (1 + scale)) << "element " << i;
}

TEST(OnednnSession, AConvNetAgreesWithTheReferenceWithAndWithoutOnednn) {
  const TensorData x = TensorData::randn(DType::F32, {2, 16, 12, 12}, 9);
  Expected<std::vector<TensorData>> want = reference::run(parseOk(kNet), {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status().message();
  const bool was = cpu::onednnEnabled();
  for (const bool onednn : {true, false}) {
    SCOPED_TRACE(onednn ? "oneDNN" : "OpenBLAS");
    cpu::setOnednnEnabled(onednn);
    Expected<Executable> exe = build(parseOk(kNet), CompileOptions{});
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    Expected<Session> s = Session::create(std::move(exe).value(), Session::Options{.checkPlan = true});
    ASSERT_TRUE(s.ok()) << s.status().message();
    // The 64-row linear and matmul do not pack (over 32 rows); the two convolutions do.
    if (onednn && *cpu::onednnVersion() != '\0')
      EXPECT_GT(s->loadStats().packedWeightBytes, 0) << "the convolutions did not take oneDNN";
    else
      EXPECT_EQ(s->loadStats().packedWeightBytes, 0);
    expectAgreesWithTheReference(*s, x, (*want)[0]);
  }
  cpu::setOnednnEnabled(was);
}

}  // namespace
}  // namespace ferry
