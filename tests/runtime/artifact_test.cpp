// tests/runtime/artifact_test.cpp — the saved form of an Executable (docs/artifact.md): round
// trips in memory and through files, and loading flipped, truncated and hostile bytes with an
// error that says what is wrong, never a crash or an absurd allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>
#include <tuple>

#include "common/scratch.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/artifact.h"
#include "runtime/executable.h"
#include "runtime/session.h"
#include "runtime/small_mlp.h"

// The largest single allocation made while `tTrackAllocations` is set, to show that a hostile
// file cannot make the loader allocate more than the file's own size suggests. Replacing the
// global operator new is the only portable way to see allocations; sanitizer builds keep their
// own (ASan checks new/delete pairing through it), so there the bound is not measured.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FERRY_ARTIFACT_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FERRY_ARTIFACT_TEST_ASAN 1
#endif

namespace {
thread_local bool tTrackAllocations = false;
thread_local size_t tLargestAllocation = 0;
}  // namespace

#ifndef FERRY_ARTIFACT_TEST_ASAN
// As libstdc++'s own (malloc and free); out of line, so that GCC does not pair an inlined free()
// with a new-expression and warn.
[[gnu::noinline]] void *operator new(std::size_t n) {
  if (tTrackAllocations) tLargestAllocation = std::max(tLargestAllocation, n);
  if (void *p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void *operator new[](std::size_t n) { return ::operator new(n); }
[[gnu::noinline]] void operator delete(void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void *p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
#endif

namespace ferry {
namespace {

namespace fs = std::filesystem;

constexpr size_t kHeader = 32;

// ---- building executables -----------------------------------------------------------------------

Executable built(Expected<Graph> graph, const CompileOptions &options = {}) {
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  if (!graph) return {};
  Expected<Executable> exe = build(std::move(graph).value(), options);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe ? std::move(exe).value() : Executable{};
}

Executable example(const std::string &name) {
  return built(parseFile(std::string(FERRY_SOURCE_DIR) + "/examples/" + name));
}


Executable mlp() { return built(parseGraph(kSmallMlp, "mlp.fy")); }

// Two host devices: %h pinned to cpu:1 makes a transfer; the f16 input added to an f32 one makes
// a cast (promote) or the linear computes in bf16 (autocast). Every attribute kind but tensor
// appears: ints (reshape, max_pool2d), bool (ceil_mode), int (axis), float (eps), string
// (approximate), dtype (the casts), device (the transfers).
constexpr std::string_view kMixed = R"(graph mixed {
  input %x : f16[4,16] @cpu
  input %y : f32[4,16] @cpu
  param %w : f32[8,16] = randn(seed=3)
  param %b : f32[8] = randn(seed=4)
  param %ln.weight : f32[8] = ones
  %s = add(%x, %y)
  %h @cpu:1 = linear(%s, %w, %b)
  %n = layer_norm(%h, %ln.weight, eps=0.001)
  %g = gelu(%n, approximate="tanh")
  %r = reshape(%g, shape=[1,2,4,4])
  %m = max_pool2d(%r, kernel=[2,2], ceil_mode=true)
  %o = softmax(%m, axis=1)
  output %o
}
)";

Executable mixed(DTypePolicy::Kind policy) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.placement = PlacementPolicy::Auto;
  o.dtype.kind = policy;
  o.dtype.low = DType::BF16;
  return built(parseGraph(kMixed, "mixed.fy"), o);
}

// `exe` plus a constant step (lowering turns constants into weights, so only a hand-made step
// carries a tensor attribute): a bool tensor written to a new activation slot, in bytes added at
// the end of the workspace (validate() refuses slots live at once that share bytes).
Executable withTensorAttribute(Executable exe) {
  const TensorData value =
      TensorData::fromDoubles(DType::Bool, {5}, std::vector<double>{1, 0, 1, 1, 0});
  Workspace &ws = exe.workspaces.at(0);
  const size_t offset = ws.bytes;
  ws.bytes += Executable::kAlignment;
  exe.slots.push_back(Slot{"k", value.type(), ws.device, SlotKind::Activation, -1, offset});
  exe.steps.push_back(Step{OpKind::Constant,
                           {value},
                           {},
                           static_cast<int32_t>(exe.slots.size() - 1),
                           Location{"k.cpp", 3, 9},
                           false});
  EXPECT_TRUE(exe.validate().ok()) << exe.validate().message();
  return exe;
}

// ---- comparing -------------------------------------------------------------------------------

bool sameBits(const TensorData &a, const TensorData &b) {
  return a.type() == b.type() && a.byteSize() == b.byteSize() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

bool sameAttr(const AttrValue &a, const AttrValue &b) {
  if (a.index() != b.index()) return false;
  if (const auto *x = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  if (const auto *x = std::get_if<TensorData>(&a)) return sameBits(*x, std::get<TensorData>(b));
  return a == b;
}

void expectSame(const Executable &a, const Executable &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.devices, b.devices);
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (size_t i = 0; i < a.slots.size(); ++i) {
    const Slot &x = a.slots[i], &y = b.slots[i];
    EXPECT_EQ(x.name, y.name) << "slot " << i;
    EXPECT_EQ(x.type, y.type) << "slot " << i;
    EXPECT_EQ(x.device, y.device) << "slot " << i;
    EXPECT_EQ(x.kind, y.kind) << "slot " << i;
    EXPECT_EQ(x.weight, y.weight) << "slot " << i;
    EXPECT_EQ(x.offset, y.offset) << "slot " << i;
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  for (auto [xs, ys, what] : {std::tuple{&a.steps, &b.steps, "step "},
                              std::tuple{&a.loadSteps, &b.loadSteps, "load step "}}) {
    ASSERT_EQ(xs->size(), ys->size()) << what;
    for (size_t i = 0; i < xs->size(); ++i) {
      const Step &x = (*xs)[i], &y = (*ys)[i];
      EXPECT_EQ(x.op, y.op) << what << i;
      ASSERT_EQ(x.attrs.size(), y.attrs.size()) << what << i;
      for (size_t k = 0; k < x.attrs.size(); ++k)
        EXPECT_TRUE(sameAttr(x.attrs[k], y.attrs[k]))
            << what << i << " attribute " << k << ": " << attrValueStr(x.attrs[k]) << " vs "
            << attrValueStr(y.attrs[k]);
      EXPECT_EQ(x.operands, y.operands) << what << i;
      EXPECT_EQ(x.result, y.result) << what << i;
      EXPECT_EQ(x.loc, y.loc) << what << i << ": " << x.loc.str() << " vs " << y.loc.str();
      EXPECT_EQ(x.inserted, y.inserted) << what << i;
      EXPECT_EQ(x.plan.kernel, y.plan.kernel) << what << i;
      EXPECT_EQ(x.plan.scratchBytes, y.plan.scratchBytes) << what << i;
      EXPECT_EQ(x.scratchOffset, y.scratchOffset) << what << i;
      ASSERT_EQ(x.body.size(), y.body.size()) << what << i;
      for (size_t j = 0; j < x.body.size(); ++j) {
        const MicroOp &p = x.body[j], &q = y.body[j];
        EXPECT_EQ(p.op, q.op) << what << i << " micro-op " << j;
        ASSERT_EQ(p.attrs.size(), q.attrs.size()) << what << i << " micro-op " << j;
        for (size_t k = 0; k < p.attrs.size(); ++k)
          EXPECT_TRUE(sameAttr(p.attrs[k], q.attrs[k])) << what << i << " micro-op " << j;
        EXPECT_EQ(p.args, q.args) << what << i << " micro-op " << j;
        EXPECT_EQ(p.type, q.type) << what << i << " micro-op " << j;
        EXPECT_EQ(p.name, q.name) << what << i << " micro-op " << j;
        EXPECT_EQ(p.loc, q.loc) << what << i << " micro-op " << j;
      }
    }
  }
  ASSERT_EQ(a.workspaces.size(), b.workspaces.size());
  for (size_t i = 0; i < a.workspaces.size(); ++i) {
    EXPECT_EQ(a.workspaces[i].device, b.workspaces[i].device);
    EXPECT_EQ(a.workspaces[i].bytes, b.workspaces[i].bytes);
  }
  EXPECT_EQ(a.planTransfers, b.planTransfers);
  EXPECT_EQ(a.planTransferBytes, b.planTransferBytes);
  EXPECT_EQ(a.planLoadTransfers, b.planLoadTransfers);
  EXPECT_EQ(a.planLoadTransferBytes, b.planLoadTransferBytes);
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i)
    EXPECT_TRUE(sameBits(a.weights[i], b.weights[i])) << "weight " << i;
}

// serialize -> deserialize -> serialize gives the same bytes and an equal executable.
void expectRoundTrip(const Executable &exe) {
  const std::string bytes = exe.serialize();
  Expected<Executable> back = Executable::deserialize(bytes, "rt.ferry");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->serialize(), bytes);
  expectSame(exe, *back);
}

std::set<AttrKind> attrKinds(const Executable &exe) {
  std::set<AttrKind> kinds;
  for (const Step &st : exe.steps) {
    for (const AttrValue &a : st.attrs) kinds.insert(attrKind(a));
    for (const MicroOp &m : st.body)
      for (const AttrValue &a : m.attrs) kinds.insert(attrKind(a));
  }
  return kinds;
}

// A step of `op`, or a fused step with `op` in its body.
bool hasStep(const Executable &exe, OpKind op) {
  return std::any_of(exe.steps.begin(), exe.steps.end(), [&](const Step &st) {
    return st.op == op || std::any_of(st.body.begin(), st.body.end(),
                                      [&](const MicroOp &m) { return m.op == op; });
  });
}

// ---- bytes -----------------------------------------------------------------------------------

// The layout written independently of runtime/artifact.cpp, from docs/artifact.md.
std::string le(uint64_t v, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
std::string str(std::string_view s) { return le(s.size(), 4) + std::string(s); }
uint64_t readLe(std::string_view b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b[at + i])} << (8 * i);
  return v;
}
uint64_t fnv1a(std::string_view b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : b) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}
// A slot's record up to and including its kind byte.
std::string slotRecord(const Slot &s) {
  std::string r = str(s.name) + str(dtypeName(s.type.dtype)) + le(s.type.shape.size(), 4);
  for (int64_t d : s.type.shape) r += le(static_cast<uint64_t>(d), 8);
  return r + str(s.device.str()) + le(static_cast<uint8_t>(s.kind), 1);
}

// The header's length and checksum made right for the (edited) payload, so the parser behind
// the checksum sees the edit.
std::string resealed(std::string bytes) {
  const std::string_view payload = std::string_view(bytes).substr(kHeader);
  bytes.replace(16, 8, le(payload.size(), 8));
  bytes.replace(24, 8, le(fnv1a(payload), 8));
  return bytes;
}

size_t find(const std::string &bytes, const std::string &needle, size_t from = kHeader) {
  const size_t at = bytes.find(needle, from);
  EXPECT_NE(at, std::string::npos) << "the layout in docs/artifact.md is not what was written";
  return at == std::string::npos ? 0 : at;
}

std::string loadError(std::string_view bytes) {
  Expected<Executable> e = Executable::deserialize(bytes, "m.ferry");
  return e.ok() ? "(loaded)" : e.status().message();
}

bool has(const std::string &text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// ---- round trips -------------------------------------------------------------------------------

TEST(Artifact, MlpRoundTripsToTheSameBytesAndFields) {
  const Executable exe = example("mlp.fy");
  ASSERT_FALSE(exe.steps.empty());
  expectRoundTrip(exe);
  // Deterministic: a second build of the same graph saves the same bytes.
  EXPECT_EQ(example("mlp.fy").serialize(), exe.serialize());
}

TEST(Artifact, CnnRoundTripsWithIntsBoolIntAndFloatAttributes) {
  // Without fusion: its batch_norms (the float attribute, eps) stay steps of their own.
  CompileOptions plain;
  plain.fusion = false;
  const Executable exe =
      built(parseFile(std::string(FERRY_SOURCE_DIR) + "/examples/cnn.fy"), plain);
  EXPECT_TRUE(hasStep(exe, OpKind::BatchNorm));
  const std::set<AttrKind> kinds = attrKinds(exe);
  for (AttrKind k : {AttrKind::Ints, AttrKind::Bool, AttrKind::Int, AttrKind::Float})
    EXPECT_TRUE(kinds.count(k)) << attrKindName(k);
  expectRoundTrip(exe);
}

TEST(Artifact, TwoDevicesWithTransfersAndCastsRoundTrip) {
  for (DTypePolicy::Kind policy : {DTypePolicy::Kind::Promote, DTypePolicy::Kind::Autocast}) {
    SCOPED_TRACE(policy == DTypePolicy::Kind::Promote ? "promote" : "autocast=bf16");
    const Executable exe = mixed(policy);
    EXPECT_EQ(exe.devices, (std::vector<Device>{Device::cpu(), Device::cpu(1)}));
    EXPECT_TRUE(hasStep(exe, OpKind::Transfer));
    EXPECT_TRUE(hasStep(exe, OpKind::Cast));
    EXPECT_GT(exe.planTransfers, 0);
    EXPECT_TRUE(
        std::any_of(exe.steps.begin(), exe.steps.end(), [](const Step &s) { return s.inserted; }));
    EXPECT_EQ(exe.placement, PlacementPolicy::Auto);
    expectRoundTrip(exe);
  }
}

// A weight pinned to cpu:1, stored in f16 and computed with in f32 on cpu: sent as f16 and
// widened there, both once, at load (load steps, loaded slots).
TEST(Artifact, LoadStepsRoundTrip) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.placement = PlacementPolicy::Auto;
  o.dtype.kind = DTypePolicy::Kind::Promote;
  const Executable exe = built(parseGraph(R"(graph moved {
  input %x : f32[4,8] @cpu
  param %w : f16[6,8] @cpu:1 = randn(seed=3)
  %y = linear(%x, %w)
  output %y
})",
                                          "moved.fy"),
                               o);
  ASSERT_EQ(exe.loadSteps.size(), 2u);
  EXPECT_EQ(exe.loadSteps[0].op, OpKind::Transfer);
  EXPECT_EQ(exe.loadSteps[1].op, OpKind::Cast);
  EXPECT_EQ(exe.planTransfers, 0);
  EXPECT_EQ(exe.planLoadTransfers, 1);
  EXPECT_EQ(exe.planLoadTransferBytes, 6 * 8 * 2);
  for (const Step &st : exe.loadSteps)
    EXPECT_EQ(exe.slots[static_cast<size_t>(st.result)].kind, SlotKind::Loaded);
  expectRoundTrip(exe);
  // A hand-edited plan count is refused like any other inconsistency.
  Executable wrong = exe;
  wrong.planLoadTransfers = 0;
  const std::string e = loadError(wrong.serialize());
  EXPECT_TRUE(has(e, "m.ferry: the plan counts 0 load-time transfers of 96 bytes")) << e;
}

TEST(Artifact, EveryAttributeKindRoundTrips) {
  const Executable exe = withTensorAttribute(mixed(DTypePolicy::Kind::Promote));
  EXPECT_EQ(attrKinds(exe).size(), 8u);  // bool int float ints string dtype device tensor
  expectRoundTrip(exe);
}

TEST(Artifact, WeightsAreAlignedInTheFile) {
  const Executable exe = example("mlp.fy");
  const std::string bytes = exe.serialize();
  // The last weight's data ends the file and starts on a 64-byte boundary.
  const size_t last = exe.weights.back().byteSize();
  EXPECT_EQ((bytes.size() - last) % Executable::kAlignment, 0u);
  EXPECT_EQ(bytes.substr(bytes.size() - last),
            std::string(reinterpret_cast<const char *>(exe.weights.back().bytes().data()), last));
}

TEST(Artifact, HeaderIsAsDocumented) {
  const std::string bytes = mlp().serialize();
  EXPECT_EQ(bytes.substr(0, 8), "FERRYEXE");
  EXPECT_EQ(readLe(bytes, 8, 4), Executable::kFormatVersion);
  EXPECT_EQ(readLe(bytes, 12, 4), 0u);
  EXPECT_EQ(readLe(bytes, 16, 8), bytes.size() - kHeader);
  EXPECT_EQ(readLe(bytes, 24, 8), fnv1a(std::string_view(bytes).substr(kHeader)));
  EXPECT_EQ(bytes.substr(kHeader, 7), str("mlp"));
}

// ---- files -------------------------------------------------------------------------------------

TEST(Artifact, SaveAndLoadThroughAFile) {
  const testutil::ScratchDir scratch("artifact_save");
  const std::string dir = scratch.str();
  const std::string path = dir + "/model.ferry";
  const Executable exe = withTensorAttribute(mixed(DTypePolicy::Kind::Autocast));
  ASSERT_TRUE(exe.save(path).ok());
  Expected<Executable> back = Executable::load(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  expectSame(exe, *back);
  // Saving again replaces the file, and no temporary file is left beside it.
  const Executable other = example("mlp.fy");
  ASSERT_TRUE(other.save(path).ok());
  back = Executable::load(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->serialize(), other.serialize());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

// The one test both tools use to tell an executable from a model: the magic, nothing else.
TEST(Artifact, AnExecutableIsToldByItsMagic) {
  const std::string bytes = mlp().serialize();
  EXPECT_TRUE(startsWithExecutableMagic(bytes));
  EXPECT_TRUE(startsWithExecutableMagic("FERRYEXE"));
  EXPECT_TRUE(startsWithExecutableMagic("FERRYEXE and then anything"));
  for (std::string_view other : {"", "FERRYEX", "ferryexe", " FERRYEXE", "graph g {"})
    EXPECT_FALSE(startsWithExecutableMagic(other)) << other;

  const testutil::ScratchDir scratch("artifact_magic");
  auto file = [&](const std::string &name, const std::string &content) {
    std::ofstream(scratch / name, std::ios::binary) << content;
    return (scratch / name).string();
  };
  EXPECT_TRUE(isExecutableFile(file("m.ferry", bytes)));
  EXPECT_TRUE(isExecutableFile(file("named.fy", bytes)));  // the name does not matter
  EXPECT_TRUE(isExecutableFile(file("broken.ferry", "FERRYEXE, then no header")));
  EXPECT_FALSE(isExecutableFile(file("cut.ferry", "FERRYEX")));
  EXPECT_FALSE(isExecutableFile(file("empty.ferry", "")));
  EXPECT_FALSE(isExecutableFile(file("m.fy", "graph g {\n}\n")));
  EXPECT_FALSE(isExecutableFile((scratch / "missing.ferry").string()));
  EXPECT_FALSE(isExecutableFile(scratch.str()));  // a folder
}

TEST(Artifact, SaveIntoAMissingFolderNamesIt) {
  const testutil::ScratchDir scratch("artifact_missing");
  const std::string root = scratch.str(), dir = root + "/no/such/folder";
  Status s = mlp().save(dir + "/model.ferry");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "artifact");
  EXPECT_TRUE(has(s.message(), "the folder '" + dir + "' does not exist")) << s.message();
}

TEST(Artifact, AFailedSaveLeavesNoFileBehind) {
  const testutil::ScratchDir scratch("artifact_failed");
  const std::string dir = scratch.str();
  fs::create_directory(dir + "/model.ferry");  // the target is a folder: rename cannot replace it
  Status s = mlp().save(dir + "/model.ferry");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(has(s.message(), dir + "/model.ferry: cannot save: is a directory")) << s.message();
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(Artifact, LoadOfAMissingFileNamesIt) {
  const testutil::ScratchDir scratch("artifact_load");
  const std::string dir = scratch.str(), path = dir + "/absent.ferry";
  Expected<Executable> e = Executable::load(path);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().diagnostics()[0].code, "artifact");
  EXPECT_TRUE(has(e.status().message(), path + ": cannot open for reading: No such file"))
      << e.status().message();
  e = Executable::load(dir);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(has(e.status().message(), dir + ": is a directory")) << e.status().message();
}

// ---- magic, version, corruption, truncation
// ------------------------------------------------------

// A linear with a bias, gelu, a residual add and a cast to f16 after it (one fused step anchored
// on the linear), and an elementwise tree beside it reading a broadcast row (another).
constexpr std::string_view kFused = R"(graph fused {
  input %x : f32[4,16]
  input %r : f32[4,8]
  param %w : f32[8,16] = randn(seed=1)
  param %b : f32[8] = randn(seed=2)
  param %row : f32[8] = randn(seed=3)
  %h = linear(%x, %w, %b)
  %g = gelu(%h, approximate="tanh")
  %s = add(%g, %r)
  %y = cast(%s, to=f16)
  %t = mul(%r, %row)
  %pos = greater(%t, 0.0)
  %n = neg(%t)
  %u = where(%pos, %t, %n)
  output %y
  output %u
}
)";

TEST(Artifact, FusedStepsRoundTripWithTheirBodies) {
  const Executable exe = built(parseGraph(kFused, "fused.fy"));
  std::vector<const Step *> fused;
  for (const Step &st : exe.steps)
    if (!st.body.empty()) fused.push_back(&st);
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0]->op, OpKind::Linear);
  EXPECT_EQ(fused[0]->body.size(), 4u);  // linear, gelu, add, cast
  EXPECT_EQ(fused[0]->body[1].attrs.size(), 1u);
  EXPECT_EQ(fused[1]->body.size(), 4u);  // mul, greater, neg, where (the literal is a weight)
  expectRoundTrip(exe);
  // Loaded, it runs as the same graph compiled without fusion does, to the byte.
  CompileOptions plain;
  plain.fusion = false;
  const Executable unfused = built(parseGraph(kFused, "fused.fy"), plain);
  Expected<Executable> back = Executable::deserialize(exe.serialize(), "fused.ferry");
  ASSERT_TRUE(back.ok()) << back.status().message();
  std::vector<NamedTensor> inputs;
  for (const auto &[name, shape] : {std::pair{"x", Shape{4, 16}}, std::pair{"r", Shape{4, 8}}}) {
    TensorData t(DType::F32, shape);
    auto *v = reinterpret_cast<float *>(t.mutableBytes().data());
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>((i * 37 % 19) - 9) / 4.0f;
    inputs.push_back({name, Tensor(t)});
  }
  Expected<Session> a = Session::create(std::move(back).value());
  Expected<Session> b = Session::create(unfused);
  ASSERT_TRUE(a.ok() && b.ok());
  Expected<RunResult> ra = a->run(inputs), rb = b->run(inputs);
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  ASSERT_EQ(ra->outputs.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const TensorData x = ra->outputs[k].tensor.data(), y = rb->outputs[k].tensor.data();
    ASSERT_EQ(x.type(), y.type());
    EXPECT_EQ(std::memcmp(x.bytes().data(), y.bytes().data(), x.bytes().size()), 0) << k;
  }
}

TEST(Artifact, OtherFilesAndVersionsAreNamed) {
  const std::string bytes = mlp().serialize();
  const std::string npy = std::string("\x93NUMPY\x01\x00", 8) + bytes.substr(8);
  EXPECT_TRUE(has(loadError(npy), "m.ferry: not a ferry executable (bad magic): expected "
                                  "'FERRYEXE', found '\\x93NUMPY\\x01\\x00'"))
      << loadError(npy);
  EXPECT_TRUE(has(loadError("graph mlp {}"), "not a ferry executable (bad magic)"));
  // 1 to 4: files of older builds (before kernel plans, load steps, imported locations, fused
  // bodies).
  for (uint32_t version : {0u, 1u, 2u, 3u, 4u, 7u, 0xffffffffu}) {
    std::string v = bytes;
    v.replace(8, 4, le(version, 4));
    EXPECT_TRUE(has(loadError(v), "m.ferry: format version " + std::to_string(version) +
                                      ", this build reads version " +
                                          std::to_string(Executable::kFormatVersion)))
        << loadError(v);
    // The version is told even when nothing of the header follows it.
    EXPECT_TRUE(has(loadError(v.substr(0, 12)), "format version " + std::to_string(version)));
  }
  // An older file says what to do about it.
  std::string v2 = bytes;
  v2.replace(8, 4, le(2, 4));
  EXPECT_TRUE(has(loadError(v2), "m.ferry: format version 2, this build reads version 6: the "
                                 "file was written by an older ferry; compile the model again"))
      << loadError(v2);
  std::string flags = bytes;
  flags[13] = 1;
  EXPECT_TRUE(has(loadError(flags), "bad flags at byte 12: expected 0"));
}

// Flips `mask` into byte `at` of `bytes` and returns the loader's error.
std::string flipped(std::string bytes, size_t at, uint8_t mask) {
  bytes[at] = static_cast<char>(static_cast<uint8_t>(bytes[at]) ^ mask);
  return loadError(bytes);
}

TEST(Artifact, EveryHeaderByteFlippedIsNamed) {
  const std::string bytes = mixed(DTypePolicy::Kind::Promote).serialize();
  for (size_t at = 0; at < kHeader; ++at)
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      const std::string e = flipped(bytes, at, mask);
      SCOPED_TRACE("byte " + std::to_string(at) + " ^ " + std::to_string(mask) + ": " + e);
      EXPECT_TRUE(has(e, "m.ferry: "));
      if (at < 8)
        EXPECT_TRUE(has(e, "not a ferry executable (bad magic)"));
      else if (at < 12)
        EXPECT_TRUE(has(e, "this build reads version " + std::to_string(Executable::kFormatVersion)));
      else if (at < 16)
        EXPECT_TRUE(has(e, "bad flags at byte 12"));
      else if (at < 24)
        // A longer payload than the file holds is a truncation, a shorter one leaves bytes over.
        EXPECT_TRUE(has(e, "truncated at byte " + std::to_string(bytes.size())) ||
                    has(e, "trailing data at byte "));
      else
        EXPECT_TRUE(has(e, "checksum mismatch: the file is corrupted"));
    }
}

TEST(Artifact, EveryPayloadByteFlippedFailsTheChecksum) {
  // Every byte of a small executable (all sections, weights included), then positions spread
  // over a large one, its first and last byte included.
  const std::string small = withTensorAttribute(mixed(DTypePolicy::Kind::Autocast)).serialize();
  for (size_t at = kHeader; at < small.size(); ++at)
    for (uint8_t mask : {0x01, 0xff})
      ASSERT_TRUE(
          has(flipped(small, at, mask), "m.ferry: checksum mismatch: the file is corrupted"))
          << "byte " << at << ": " << flipped(small, at, mask);
  const std::string large = example("cnn.fy").serialize();
  std::vector<size_t> positions = {kHeader, large.size() - 1};
  for (size_t i = 0; i < 256; ++i)
    positions.push_back(kHeader + (large.size() - kHeader - 1) * i / 255);
  for (size_t at = kHeader; at < kHeader + 512; ++at) positions.push_back(at);  // the metadata
  for (size_t at : positions)
    ASSERT_TRUE(has(flipped(large, at, 0x10), "checksum mismatch")) << "byte " << at;
}

TEST(Artifact, TruncationAnywhereIsNamed) {
  const std::string bytes = withTensorAttribute(mixed(DTypePolicy::Kind::Promote)).serialize();
  EXPECT_TRUE(has(loadError(""), "m.ferry: truncated at byte 0: expected the 32-byte header, "
                                 "found an empty file"));
  for (size_t n = 1; n < kHeader; ++n)
    EXPECT_TRUE(has(loadError(bytes.substr(0, n)),
                    "m.ferry: truncated at byte " + std::to_string(n) +
                        ": expected the 32-byte header, found " + std::to_string(n) + " bytes"))
        << loadError(bytes.substr(0, n));
  for (size_t n = kHeader; n < bytes.size(); ++n)
    ASSERT_TRUE(has(loadError(bytes.substr(0, n)),
                    "m.ferry: truncated at byte " + std::to_string(n) + ": expected " +
                        std::to_string(bytes.size() - kHeader) + " bytes of payload, found " +
                        std::to_string(n - kHeader)))
        << loadError(bytes.substr(0, n));
  EXPECT_TRUE(
      has(loadError(bytes + "x"), "m.ferry: trailing data at byte " + std::to_string(bytes.size()) +
                                      ": the header says " +
                                      std::to_string(bytes.size() - kHeader) + " payload bytes, " +
                                      std::to_string(bytes.size() - kHeader + 1) + " follow it"));
}

// ---- hostile payloads behind a valid checksum
// ----------------------------------------------------

// The loader's error for `bytes` with `edit` applied and the header resealed.
std::string hostile(const std::string &bytes, size_t at, const std::string &edit) {
  std::string b = bytes;
  b.replace(at, edit.size(), edit);
  return loadError(resealed(b));
}

TEST(Artifact, HostileCountsAndLengthsAreTruncations) {
  const Executable exe = mlp();
  const std::string bytes = exe.serialize();
  EXPECT_EQ(hostile(bytes, kHeader, le(0xfffffff0u, 4)),
            "error: m.ferry: truncated at byte 36: expected 4294967280 bytes of executable name, "
            "found " +
                std::to_string(bytes.size() - kHeader - 4) + " [artifact]");
  // name, placement, devices: then the slot count.
  size_t slotCount = kHeader + 4 + exe.name.size() + 1 + 4;
  for (Device d : exe.devices) slotCount += 4 + d.str().size();
  EXPECT_EQ(readLe(bytes, slotCount, 4), exe.slots.size());
  const std::string e = hostile(bytes, slotCount, le(0xffffffffu, 4));
  EXPECT_TRUE(has(e, "m.ferry: truncated at byte " + std::to_string(slotCount) +
                         ": expected at least 128849018850 bytes for slot count 4294967295"))
      << e;
  // The last weight's shape grown past the end of the file.
  const TensorData &last = exe.weights.back();
  ASSERT_EQ(last.shape(), (Shape{3}));
  const size_t record = bytes.rfind(str("f32") + le(1, 4) + le(3, 8));
  ASSERT_NE(record, std::string::npos);
  const size_t dims = record + 11;  // its only dim
  const std::string grown = hostile(bytes, dims, le(1000, 8));
  EXPECT_TRUE(has(grown, "truncated at byte " + std::to_string(bytes.size() - 12) +
                             ": expected 4000 bytes of weight 3 (%fc2.bias) data, found 12"))
      << grown;
  // Bytes left over after the weights.
  EXPECT_TRUE(has(loadError(resealed(bytes + std::string(8, '\0'))),
                  "bad payload end at byte " + std::to_string(bytes.size()) +
                      ": expected the end of the payload after the weights, found 8 more bytes"));
}

TEST(Artifact, HostileNamesAndEnumsAreNamed) {
  const Executable exe = mlp();
  const std::string bytes = exe.serialize();
  const size_t linear = find(bytes, str("linear"));
  EXPECT_TRUE(has(hostile(bytes, linear + 4, "lineaz"),
                  "m.ferry: bad step 0 op at byte " + std::to_string(linear) +
                      ": expected an op of this build, found 'lineaz'"))
      << hostile(bytes, linear + 4, "lineaz");
  const size_t x = find(bytes, slotRecord(exe.slots[0]));
  EXPECT_EQ(exe.slots[0].name, "x");
  const size_t dtype = x + 5;
  EXPECT_TRUE(has(hostile(bytes, dtype + 4, "f33"),
                  "bad slot 0 (%x) dtype at byte " + std::to_string(dtype) +
                      ": expected a dtype (bool, u8, i8, i32, i64, f16, bf16, f32, f64), found "
                      "'f33'"))
      << hostile(bytes, dtype + 4, "f33");
  const size_t device = find(bytes, str("cpu"));  // the device list
  EXPECT_TRUE(has(hostile(bytes, device + 4, "gpu"),
                  "bad device at byte " + std::to_string(device) + ": expected a device"));
  const size_t kind = x + slotRecord(exe.slots[0]).size() - 1;
  EXPECT_TRUE(has(hostile(bytes, kind, le(7, 1)),
                  "bad slot 0 (%x) kind at byte " + std::to_string(kind) +
                      ": expected 0 (input), 1 (weight), 2 (activation) or 3 (loaded), "
                      "found 7"));
  // A negative and an absurd dim of %x (f32[4,16]).
  EXPECT_TRUE(has(hostile(bytes, dtype + 11, le(static_cast<uint64_t>(-5), 8)),
                  "bad slot 0 (%x) dim at byte " + std::to_string(dtype + 11) +
                      ": expected a non-negative size, found -5"));
  EXPECT_TRUE(has(hostile(bytes, dtype + 19, le(uint64_t{1} << 60, 8)),
                  "bad slot 0 (%x) dim at byte " + std::to_string(dtype + 19) +
                      ": expected a size that keeps the byte size within 63 bits"));
  const size_t placement = kHeader + 4 + exe.name.size();
  EXPECT_TRUE(has(hostile(bytes, placement, le(2, 1)), "bad placement policy at byte 39"));
}

TEST(Artifact, HostileStepsAreNamed) {
  const Executable exe = withTensorAttribute(mlp());
  const std::string bytes = exe.serialize();
  // The constant step: op, 1 attribute of kind 7 (tensor) bool[5], no operands, result, location.
  const size_t constant = find(bytes, str("constant") + le(1, 4));
  const size_t kindAt = constant + 4 + 8 + 4;
  EXPECT_EQ(bytes[kindAt], 7);
  EXPECT_TRUE(has(hostile(bytes, kindAt, le(9, 1)),
                  "bad step " + std::to_string(exe.steps.size() - 1) +
                      " ('constant') attribute 0 at byte " + std::to_string(kindAt) +
                      ": expected an attribute kind (0 to 7), found 9"));
  const size_t element = kindAt + 1 + 4 + 4 + 4 + 8;  // kind, "bool", rank, dim, then data
  EXPECT_EQ(bytes[element], 1);
  EXPECT_TRUE(has(hostile(bytes, element, le(2, 1)), "attribute 0 data at byte " +
                                                         std::to_string(element) +
                                                         ": expected a bool (0 or 1), found 2"))
      << hostile(bytes, element, le(2, 1));
  // data, operands, result, location (file "k.cpp", line, column, empty node)
  const size_t inserted = element + 5 + 4 + 4 + 4 + 5 + 4 + 4 + 4;
  EXPECT_EQ(bytes.substr(element + 5 + 8, 9), str("k.cpp"));
  EXPECT_TRUE(
      has(hostile(bytes, inserted, le(2, 1)),
          "inserted flag at byte " + std::to_string(inserted) + ": expected 0 or 1, found 2"));
  // The constant's result made an input slot: the step then writes no activation (validate()).
  const size_t result = element + 5 + 4;
  EXPECT_TRUE(has(hostile(bytes, result, le(0, 4)),
                  "m.ferry: step " + std::to_string(exe.steps.size() - 1) +
                      " ('constant') writes no activation slot"))
      << hostile(bytes, result, le(0, 4));
}

TEST(Artifact, AnInconsistentExecutableIsRejectedAfterParsing) {
  const Executable exe = mlp();
  const std::string bytes = exe.serialize();
  // %fc1.weight pointing at a weight that does not exist.
  int32_t fc1 = -1;
  for (size_t i = 0; i < exe.slots.size(); ++i)
    if (exe.slots[i].name == "fc1.weight") fc1 = static_cast<int32_t>(i);
  ASSERT_GE(fc1, 0);
  const Slot &w = exe.slots[static_cast<size_t>(fc1)];
  const size_t weight = find(bytes, slotRecord(w)) + slotRecord(w).size();
  std::string e = hostile(bytes, weight, le(99, 4));
  EXPECT_TRUE(
      has(e, "m.ferry: slot " + std::to_string(fc1) + " (%fc1.weight) names weight 99 of 4"))
      << e;
  // An activation past the end of its workspace.
  const auto h = static_cast<size_t>(exe.steps[0].result);
  const size_t offset = find(bytes, slotRecord(exe.slots[h])) + slotRecord(exe.slots[h]).size() + 4;
  e = hostile(bytes, offset, le(uint64_t{1} << 40, 8));
  EXPECT_TRUE(has(e, "lies outside its device's workspace")) << e;
  // The dims of step 0's result swapped: the same bytes, the wrong shape for the fused
  // linear + relu whose body gives f32[4,8].
  ASSERT_EQ(exe.slots[h].type, (TensorType{DType::F32, {4, 8}}));
  ASSERT_EQ(exe.steps[0].body.size(), 2u);
  const size_t dims = find(bytes, slotRecord(exe.slots[h])) + 4 + exe.slots[h].name.size() + 7 + 4;
  e = hostile(bytes, dims, le(8, 8) + le(4, 8));
  EXPECT_TRUE(has(e, "m.ferry: step 0 (fused 'linear'), micro-op 0 ('linear' %h): is f32[4,8], "
                     "not of the step's shape f32[8,4]"))
      << e;
}

// Every byte of the metadata of a small executable set to values that break counts, lengths,
// names, enums and ids, resealed: each load fails cleanly or gives a valid executable, and no
// allocation is much larger than the file.
TEST(Artifact, MutatedPayloadsBehindAValidChecksumNeverCrash) {
  const Executable exe = withTensorAttribute(mixed(DTypePolicy::Kind::Autocast));
  const std::string bytes = exe.serialize();
  const std::vector<std::string> edits = {le(0, 1),
                                          le(0xff, 1),
                                          le(0x7f, 1),
                                          le(0x80, 1),
                                          le(1, 1),
                                          le(0xffffffff, 4),
                                          le(0x7fffffff, 4),
                                          le(0x80000000u, 4),
                                          le(64, 4),
                                          le(uint64_t{1} << 62, 8),
                                          le(static_cast<uint64_t>(-1), 8)};
  size_t loaded = 0, failed = 0;
  for (size_t at = kHeader; at < bytes.size(); ++at)
    for (const std::string &edit : edits) {
      if (at + edit.size() > bytes.size()) continue;
      std::string b = bytes;
      b.replace(at, edit.size(), edit);
      b = resealed(b);
      tLargestAllocation = 0;
      tTrackAllocations = true;
      Expected<Executable> e = Executable::deserialize(b, "m.ferry");
      tTrackAllocations = false;
#ifndef FERRY_ARTIFACT_TEST_ASAN
      ASSERT_LE(tLargestAllocation, 8 * bytes.size())
          << "byte " << at << " edit " << edit.size() << " "
          << (e.ok() ? "loaded" : e.status().message());
#endif
      if (e.ok()) {
        ++loaded;
        ASSERT_TRUE(e->validate().ok());
      } else {
        ++failed;
        ASSERT_EQ(e.status().diagnostics()[0].code, "artifact");
        ASSERT_TRUE(has(e.status().message(), "m.ferry: ")) << e.status().message();
      }
    }
  EXPECT_GT(failed, loaded);  // most edits break the executable; some (a name's byte) do not
  EXPECT_GT(loaded, 0u);
}

}  // namespace
}  // namespace ferry
