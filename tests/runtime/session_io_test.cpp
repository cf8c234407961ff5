// tests/runtime/session_io_test.cpp — inputs and outputs in the caller's memory: on the CPU a run
// reads each input where the caller's tensor is and writes each output where the caller receives
// it (Slot::external), into tensors the caller gives (I/O binding) or made for the run; what cannot
// be used in place (a moved or misaligned input, an output that is an input, a device that is not
// host memory) is copied, and counted; every mistake in the given outputs is reported at once.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "common/parse.h"
#include "runtime/hosted_device.h"
#include "passes/lower.h"
#include "runtime/artifact.h"
#include "runtime/session.h"

namespace ferry {
namespace {

constexpr std::string_view kMlp = R"(graph mlp {
  input %x : f32[4,16] @cpu
  param %w1 : f32[8,16] = randn(seed=1)
  param %b1 : f32[8] = randn(seed=2)
  param %w2 : f32[8,3] = randn(seed=3)
  %h = linear(%x, %w1, %b1)
  %a = relu(%h)
  %y = matmul(%a, %w2)
  %p = softmax(%y, axis=-1)
  output %p
  output %a
})";

Session::Options checked() {
  Session::Options o;
  o.checkPlan = true;
  return o;
}

Executable compiled(std::string_view text, CompileOptions options = {},
                    const std::vector<BackendEntry> &backends = builtinBackends()) {
  Expected<Executable> exe = build(parseOk(text), options, nullptr, backends);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe ? std::move(*exe) : Executable{};
}

Session open(Executable exe, Session::Options options = checked()) {
  Expected<Session> s = Session::create(std::move(exe), std::move(options));
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

const Slot &slotNamed(const Executable &exe, std::string_view name) {
  for (const Slot &s : exe.slots)
    if (s.name == name) return s;
  ADD_FAILURE() << "no slot " << name;
  return exe.slots.front();
}

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The model's input and its outputs (p, a), as run() returns them with nothing given.
struct Reference {
  Tensor x;
  std::vector<NamedTensor> outputs;
};

Reference reference(const Session &s) {
  Reference r{Tensor(TensorData::randn(DType::F32, {4, 16}, 7)), {}};
  Expected<RunResult> ran = s.run({{"x", r.x}});
  EXPECT_TRUE(ran.ok()) << ran.status().message();
  if (ran) r.outputs = ran->outputs;
  return r;
}

TEST(SessionIo, CpuInputsAndOutputsAreTheCallersMemory) {
  const Executable exe = compiled(kMlp);
  // The plan gives them no workspace bytes: the input, and the outputs that steps write.
  EXPECT_TRUE(slotNamed(exe, "x").external);
  EXPECT_TRUE(slotNamed(exe, "p").external);
  EXPECT_TRUE(slotNamed(exe, "a").external);
  EXPECT_FALSE(slotNamed(exe, "y").external);
  const Session s = open(exe);
  const Reference want = reference(s);
  ASSERT_EQ(want.outputs.size(), 2u);

  // Fresh outputs: written in place, nothing copied in or out.
  Expected<RunResult> fresh = s.run({{"x", want.x}});
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  EXPECT_EQ(fresh->stats.inputCopyBytes, 0);
  EXPECT_EQ(fresh->stats.outputCopyBytes, 0);

  // Given outputs, twice into the same tensors: the results are the caller's tensors, equal to
  // run()'s.
  Tensor p = Tensor::zeros(DType::F32, {4, 3}), a = Tensor::zeros(DType::F32, {4, 8});
  for (int round = 0; round < 2; ++round) {
    Expected<RunResult> r = s.run({{"x", want.x}}, {{"a", a}, {"p", p}}, {});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->stats.inputCopyBytes, 0);
    EXPECT_EQ(r->stats.outputCopyBytes, 0);
    ASSERT_EQ(r->outputs.size(), 2u);
    EXPECT_EQ(r->outputs[0].name, "p");
    EXPECT_TRUE(r->outputs[0].tensor.sharesStorageWith(p));
    EXPECT_TRUE(r->outputs[1].tensor.sharesStorageWith(a));
    EXPECT_EQ(p.data(), want.outputs[0].tensor.data());
    EXPECT_EQ(a.data(), want.outputs[1].tensor.data());
    std::memset(p.data().mutableBytes().data(), 0, p.byteSize());  // written again next round
  }

  // One given, one made for the run.
  Tensor onlyA = Tensor::zeros(DType::F32, {4, 8});
  Expected<RunResult> mixed = s.run({{"x", want.x}}, {{"a", onlyA}}, {});
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  EXPECT_TRUE(mixed->outputs[1].tensor.sharesStorageWith(onlyA));
  EXPECT_EQ(mixed->outputs[0].tensor.data(), want.outputs[0].tensor.data());
  EXPECT_EQ(onlyA.data(), want.outputs[1].tensor.data());
}

// Outputs made for a run come from the session's cache: storage the caller released is reused
// by the next run, storage still held never is, and an output outlives its session.
TEST(SessionIo, ReleasedOutputsAreReusedHeldOnesNever) {
  std::optional<Session> s = open(compiled(kMlp));
  const Tensor x(TensorData::randn(DType::F32, {4, 16}, 7));
  const std::byte *first = nullptr;
  {
    Expected<RunResult> r = s->run({{"x", x}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    first = r->outputs[0].tensor.bytes().data();
  }
  Expected<RunResult> again = s->run({{"x", x}});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->outputs[0].tensor.bytes().data(), first);  // released, so reused
  Expected<RunResult> third = s->run({{"x", x}});
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_NE(third->outputs[0].tensor.bytes().data(), first);  // still held by `again`
  EXPECT_EQ(third->outputs[0].tensor.data(), again->outputs[0].tensor.data());
  const TensorData kept = third->outputs[0].tensor.data().clone();
  s.reset();  // the outputs stay valid without their session
  EXPECT_EQ(third->outputs[0].tensor.data(), kept);
}

TEST(SessionIo, TheWorkspaceHoldsNeitherInputsNorOutputs) {
  // A chain of elementwise ops fused into one step: its input and output are the caller's, so
  // the CPU's workspace is empty.
  const Executable exe = compiled(R"(graph chain {
  input %x : f32[1024] @cpu
  %a = mul(%x, 1.5)
  %y = tanh(%a)
  output %y
})");
  ASSERT_EQ(exe.steps.size(), 1u);
  ASSERT_EQ(exe.workspaces.size(), 1u);
  EXPECT_EQ(exe.workspaces[0].bytes, 0u);
  CompileOptions unfused;
  unfused.fusion = false;
  const Executable apart = compiled(R"(graph chain {
  input %x : f32[1024] @cpu
  %a = mul(%x, 1.5)
  %y = tanh(%a)
  output %y
})", unfused);
  ASSERT_EQ(apart.workspaces.size(), 1u);
  EXPECT_EQ(apart.workspaces[0].bytes, 4096u);  // %a alone
}

TEST(SessionIo, WhatCannotBeUsedInPlaceIsCopiedAndCounted) {
  const Executable exe = compiled(kMlp);
  const Session s = open(exe);
  const Reference want = reference(s);

  // An input that is not 64-byte aligned (a view 4 bytes into a buffer) is copied in.
  std::vector<std::byte> buffer(want.x.byteSize() + 64);
  auto *start = reinterpret_cast<std::byte *>(
      (reinterpret_cast<uintptr_t>(buffer.data()) + 63) / 64 * 64 + 4);
  std::memcpy(start, want.x.bytes().data(), want.x.byteSize());
  const Tensor misaligned(TensorData::view(want.x.type(), {start, want.x.byteSize()}, nullptr));
  Expected<RunResult> r = s.run({{"x", misaligned}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stats.inputCopyBytes, static_cast<int64_t>(want.x.byteSize()));
  EXPECT_EQ(r->stats.outputCopyBytes, 0);
  EXPECT_EQ(r->outputs[0].tensor.data(), want.outputs[0].tensor.data());

  // An output that is the input itself, or a weight, is copied out.
  const Session echo = open(compiled(R"(graph echo {
  input %x : f32[4] @cpu
  param %w : f32[4] = randn(seed=4)
  %y = add(%x, %w)
  output %x
  output %w
  output %y
})"));
  const Tensor x(TensorData::randn(DType::F32, {4}, 11));
  Tensor givenX = Tensor::zeros(DType::F32, {4});
  Expected<RunResult> e = echo.run({{"x", x}}, {{"x", givenX}}, {});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->stats.inputCopyBytes, 0);
  EXPECT_EQ(e->stats.outputCopyBytes, 2 * 16);  // x and w
  EXPECT_EQ(givenX.data(), x.data());
  EXPECT_FALSE(e->outputs[0].tensor.sharesStorageWith(x));
  EXPECT_EQ(e->outputs[1].tensor.data(), TensorData::randn(DType::F32, {4}, 4));
}

TEST(SessionIo, AnInputMovedFromAnotherDeviceIsACopy) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.placement = PlacementPolicy::Auto;
  const Session s = open(compiled(kMlp, o));
  const Reference want = reference(s);
  Expected<Tensor> onOther = want.x.to(Device::cpu(1));
  ASSERT_TRUE(onOther.ok());
  Expected<RunResult> r = s.run({{"x", *onOther}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stats.inputMoves, 1);
  EXPECT_EQ(r->stats.inputCopyBytes, static_cast<int64_t>(want.x.byteSize()));
  EXPECT_EQ(r->outputs[0].tensor.data(), want.outputs[0].tensor.data());
}

TEST(SessionIo, EveryMistakeInTheGivenOutputsIsReportedAtOnce) {
  const Session s = open(compiled(kMlp));
  const Tensor x(TensorData::randn(DType::F32, {4, 16}, 7));
  const Tensor wrongShape = Tensor::zeros(DType::F32, {3, 4});
  Expected<Tensor> elsewhere = Tensor::zeros(DType::F32, {4, 8}).to(Device::cpu(1));
  ASSERT_TRUE(elsewhere.ok());
  const Tensor p = Tensor::zeros(DType::F32, {4, 3});
  Expected<RunResult> r =
      s.run({{"x", x}, {"z", x}},
            {{"p", wrongShape}, {"q", p}, {"a", *elsewhere}, {"p", p}}, {});
  ASSERT_FALSE(r.ok());
  const std::string m = r.status().message();
  EXPECT_TRUE(has(m, "unknown input 'z'")) << m;
  EXPECT_TRUE(has(m, "the tensor given for output 'p' is f32[3,4], but the output is f32[4,3]"))
      << m;
  EXPECT_TRUE(has(m, "unknown output 'q': the model's outputs are 'p', 'a'")) << m;
  EXPECT_TRUE(has(m, "the tensor given for output 'a' is on cpu:1, but the output is returned on "
                     "cpu"))
      << m;
  EXPECT_TRUE(has(m, "output 'p' is given twice")) << m;
  EXPECT_EQ(r.status().diagnostics().size(), 5u) << m;

  // A read-only view (a mapped file's bytes) cannot be written; memory shared with an input or
  // with another output would be read while it is written.
  std::vector<std::byte> bytes(64 * 8);
  const Tensor view(TensorData::view(TensorType{DType::F32, {4, 3}},
                                     {bytes.data(), 48}, nullptr));
  r = s.run({{"x", x}}, {{"p", view}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.status().message(), "the tensor given for output 'p' is a read-only view"))
      << r.status().message();
  Tensor a = Tensor::zeros(DType::F32, {4, 8});
  const Tensor pInA(TensorData::view(TensorType{DType::F32, {4, 3}},
                                     {a.data().mutableBytes().data() + 64, 48}, nullptr));
  r = s.run({{"x", x}}, {{"p", pInA}, {"a", a}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.status().message(), "output 'p' shares memory with output 'a'") ||
              has(r.status().message(), "output 'a' shares memory with output 'p'"))
      << r.status().message();
  // Given as the input too: a run reading x while writing p into it.
  Tensor xAndP = Tensor(TensorData::randn(DType::F32, {4, 16}, 7));
  const Tensor pInX(TensorData::view(TensorType{DType::F32, {4, 3}},
                                     {xAndP.data().mutableBytes().data() + 128, 48}, nullptr));
  r = s.run({{"x", xAndP}}, {{"p", pInX}}, {});
  ASSERT_FALSE(r.ok());
  // Refused as a view and as memory shared with the input, both at once.
  EXPECT_EQ(r.status().diagnostics().size(), 2u) << r.status().message();
  EXPECT_TRUE(has(r.status().message(), "output 'p' shares memory with input 'x'"))
      << r.status().message();
  // A weight the run reads (the executable's own bytes, which a caller can reach).
  const Tensor weight(s.executable().weights.front());
  ASSERT_FALSE(weight.data().isView());
  const Tensor pInWeight(TensorData::fromStorage(
      TensorType{DType::F32, {4, 3}},
      std::shared_ptr<std::byte>(const_cast<std::byte *>(weight.bytes().data()), [](std::byte *) {})));
  r = s.run({{"x", x}}, {{"p", pInWeight}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.status().message(), "the tensor given for output 'p' shares memory with the "
                                        "weight %"))
      << r.status().message();
  // The session is unharmed.
  Expected<RunResult> ok = s.run({{"x", x}});
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

TEST(SessionIo, OutputsOnDeviceAreGivenOnTheirDevice) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  const Session s = open(compiled(R"(graph g {
  input %x : f32[8] @cpu:1
  %y = relu(%x)
  output %y
})", o));
  Expected<Tensor> onDevice1 = Tensor(TensorData::randn(DType::F32, {8}, 3)).to(Device::cpu(1));
  ASSERT_TRUE(onDevice1.ok());
  const Tensor x = *onDevice1;
  Session::RunOptions onDevice;
  onDevice.outputsOnDevice = true;
  Expected<Tensor> y = Tensor::zeros(DType::F32, {8}).to(Device::cpu(1));
  ASSERT_TRUE(y.ok());
  Expected<RunResult> r = s.run({{"x", x}}, {{"y", *y}}, onDevice);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->outputs[0].tensor.device(), Device::cpu(1));
  EXPECT_EQ(r->stats.outputCopyBytes, 0);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(y->data().at(i), std::max(0.0, x.data().at(i)));
  // Returned on the host, the tensor given must be there.
  r = s.run({{"x", x}}, {{"y", *y}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.status().message(), "is on cpu:1, but the output is returned on cpu"))
      << r.status().message();
}

// A device whose memory is not the host's keeps inputs and outputs in its workspace: inputs are
// uploaded, outputs downloaded, into the caller's tensors when given.
TEST(SessionIo, ADeviceWithoutHostMemoryCopiesIntoTheGivenOutputs) {
  const std::vector<BackendEntry> registry{builtinBackends().front(),
                                           hosted(DeviceKind::Cuda)};
  CompileOptions o;
  o.devices = {Device::cpu(), Device{DeviceKind::Cuda, 0}};
  const Executable exe = compiled(R"(graph g {
  input %x : f32[8] @cuda:0
  %y = relu(%x)
  output %y
})", o, registry);
  EXPECT_FALSE(slotNamed(exe, "x").external);
  EXPECT_FALSE(slotNamed(exe, "y").external);
  // A tensor on cuda:0 cannot be made in this build (Tensor::to refuses it): the session moves
  // the host's there.
  Session::Options so = checked();
  so.backends = registry;
  so.moveInputs = true;
  const Session m = open(exe, so);
  const Tensor host(TensorData::randn(DType::F32, {8}, 3));
  Tensor y = Tensor::zeros(DType::F32, {8});
  Expected<RunResult> r = m.run({{"x", host}}, {{"y", y}}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->outputs[0].tensor.sharesStorageWith(y));
  EXPECT_EQ(r->stats.inputCopyBytes, 32);
  EXPECT_EQ(r->stats.outputCopyBytes, 32);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(y.data().at(i), std::max(0.0, host.data().at(i)));
}

// The external flag is part of the saved form and of validate()'s checks; a runtime that cannot
// use host memory in place refuses an executable that needs it.
TEST(SessionIo, TheExternalFlagIsSavedAndChecked) {
  const Executable exe = compiled(kMlp);
  Expected<Executable> back = Executable::deserialize(exe.serialize(), "m.ferry");
  ASSERT_TRUE(back.ok()) << back.status().message();
  for (size_t i = 0; i < exe.slots.size(); ++i)
    EXPECT_EQ(back->slots[i].external, exe.slots[i].external) << exe.slots[i].name;

  Executable edited = exe;
  for (Slot &s : edited.slots)
    if (s.name == "y") s.external = true;  // an activation no one receives
  EXPECT_TRUE(has(edited.validate().message(), "%y) is an activation in the caller's memory but "
                                               "no output"))
      << edited.validate().message();
  edited = exe;
  for (Slot &s : edited.slots)
    if (s.kind == SlotKind::Weight) s.external = true;
  EXPECT_TRUE(has(edited.validate().message(), "is a weight or loaded slot in the caller's memory"))
      << edited.validate().message();
  edited = exe;
  for (Slot &s : edited.slots)
    if (s.name == "x") s.offset = 64;
  EXPECT_TRUE(has(edited.validate().message(), "is in the caller's memory but has a workspace "
                                               "offset"))
      << edited.validate().message();

  // Compiled for a hosted kind (no host memory), then edited to claim the caller's memory.
  const std::vector<BackendEntry> registry{builtinBackends().front(),
                                           hosted(DeviceKind::Cuda)};
  CompileOptions o;
  o.devices = {Device::cpu(), Device{DeviceKind::Cuda, 0}};
  Executable onCuda = compiled(R"(graph g {
  input %x : f32[8] @cuda:0
  %y = relu(%x)
  output %y
})", o, registry);
  for (Slot &s : onCuda.slots)
    if (s.name == "y") {
      s.external = true;
      s.offset = 0;
    }
  for (Workspace &w : onCuda.workspaces)
    if (w.device.kind == DeviceKind::Cuda) w.bytes = 64;  // %x alone
  ASSERT_TRUE(onCuda.validate().ok()) << onCuda.validate().message();
  Session::Options so = checked();
  so.backends = registry;
  Expected<Session> refused = Session::create(onCuda, so);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(has(refused.status().message(),
                  "keeps %y in the caller's memory on cuda:0, but that device's runtime cannot "
                  "use host memory in place"))
      << refused.status().message();
}

}  // namespace
}  // namespace ferry
