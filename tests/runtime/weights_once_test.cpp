// tests/runtime/weights_once_test.cpp — a weight exists once in memory: a loaded executable's
// weights are the bytes of the file's mapping, and a Session on the CPU reads them there (and
// the .fy path's weights where the parser put them) instead of copying them into device memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/onednn_gemm.h"
#include "backends/reference/interpreter.h"
#include "common/parse.h"
#include "common/scratch.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/executable.h"
#include "runtime/hosted_device.h"
#include "runtime/session.h"
#include "runtime/small_mlp.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

// The address ranges at which this process maps the file `path` (from /proc/self/maps).
std::vector<std::pair<uintptr_t, uintptr_t>> mappingsOf(const fs::path &path) {
  const std::string want = fs::canonical(path).string();
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    // start-end perms offset dev inode path
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, file;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, file);
    if (file != want) continue;
    const size_t dash = range.find('-');
    out.emplace_back(std::stoull(range.substr(0, dash), nullptr, 16),
                     std::stoull(range.substr(dash + 1), nullptr, 16));
  }
  return out;
}

bool inside(const std::vector<std::pair<uintptr_t, uintptr_t>> &ranges, const TensorData &t) {
  const auto begin = reinterpret_cast<uintptr_t>(t.bytes().data());
  for (auto [from, to] : ranges)
    if (begin >= from && begin + t.byteSize() <= to) return true;
  return false;
}

// Load() maps the file and makes each weight a view of its bytes there: no copy of any weight
// is made, and the bytes stay valid while the executable (or a copy of a weight) lives.
TEST(WeightsOnce, ALoadedExecutablesWeightsAreTheFilesMappedBytes) {
  testutil::ScratchDir dir("WeightsOnce.mapped");
  const fs::path file = dir.path() / "mlp.ferry";
  const Executable saved = compiledSmallMlp();
  ASSERT_TRUE(saved.save(file.string()).ok());
  Expected<Executable> loaded = Executable::load(file.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->weights.size(), 4u);
  const auto ranges = mappingsOf(file);
  ASSERT_FALSE(ranges.empty()) << file << " is not mapped";
  for (size_t i = 0; i < loaded->weights.size(); ++i) {
    const TensorData &w = loaded->weights[i];
    EXPECT_TRUE(inside(ranges, w)) << "weight " << i << " is a copy, not the file's bytes";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.bytes().data()) % Executable::kAlignment, 0u);
    EXPECT_EQ(w, saved.weights[i]);
  }
  // A weight outlives its executable; the mapping goes with the last of them.
  TensorData kept = loaded->weights[0];
  loaded = Executable{};
  EXPECT_EQ(kept, saved.weights[0]);
  EXPECT_FALSE(mappingsOf(file).empty());
  kept = TensorData();
  EXPECT_TRUE(mappingsOf(file).empty());
}

// A Session whose runtime lends host memory in place (the CPU's does) gives the kernels the
// executable's own weight bytes: the mapped file's, or the parser's for a compiled .fy; a
// runtime that does not (a GPU's) still gets them uploaded.
TEST(WeightsOnce, ASessionOnTheHostReadsTheWeightsInPlace) {
  for (bool lends : {true, false}) {
    SCOPED_TRACE(lends ? "lends host memory" : "does not");
    testutil::ScratchDir dir("WeightsOnce.inPlace");
    const fs::path file = dir.path() / "mlp.ferry";
    ASSERT_TRUE(compiledSmallMlp().save(file.string()).ok());
    for (bool fromFile : {true, false}) {
      SCOPED_TRACE(fromFile ? "loaded from a file" : "compiled from .fy");
      Expected<Executable> exe =
          fromFile ? Executable::load(file.string()) : Expected<Executable>(compiledSmallMlp());
      ASSERT_TRUE(exe.ok()) << exe.status().message();
      std::vector<const std::byte *> weights;
      for (const TensorData &w : exe->weights) weights.push_back(w.bytes().data());
      HostedDevice *device = nullptr;
      Session::Options options;
      options.checkPlan = true;
      options.backends = {BackendEntry{
          DeviceKind::Cpu, "cpu, recorded", {}, [&](const DeviceOptions &o) {
            auto d = std::make_unique<HostedDevice>(DeviceKind::Cpu, o.devices, true);
            d->lendsHost = lends;
            device = d.get();
            return Expected<std::unique_ptr<DeviceRuntime>>(std::move(d));
          }}};
      const int uploadsBefore = HostedDevice::uploads;
      Expected<Session> s = Session::create(std::move(exe).value(), options);
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_EQ(HostedDevice::uploads - uploadsBefore, lends ? 0 : 4);
      Expected<RunResult> r = s->run({{"x", Tensor(TensorData::full(DType::F32, {4, 16}, 0.5))}});
      ASSERT_TRUE(r.ok()) << r.status().message();
      // Step 0 is linear(%x, %fc1.weight, %fc1.bias): operands 1 and 2 are weights 0 and 1.
      ASSERT_FALSE(device->launched.empty());
      const std::vector<const std::byte *> &first = device->launched.front();
      ASSERT_EQ(first.size(), 3u);
      const int32_t w = s->executable().slots[static_cast<size_t>(
                                                  s->executable().steps[0].operands[1])]
                            .weight;
      ASSERT_GE(w, 0);
      EXPECT_EQ(first[1] == weights[static_cast<size_t>(w)], lends)
          << "the kernel read " << static_cast<const void *>(first[1]) << ", the weight is at "
          << static_cast<const void *>(weights[static_cast<size_t>(w)]);
    }
  }
}

// A second copy of a weight exists only as a kernel's packed layout (oneDNN's GEMMs at <= 32
// rows), within Session::Options::maxPackedWeightBytes, counted in LoadStats; at 0 there is none.
// The results agree with the unpacked session's and the reference's.
TEST(WeightsOnce, PackedCopiesStayWithinTheSessionsBudget) {
  constexpr std::string_view kMlp = R"(graph mlp {
  input %x : f32[32,784] @cpu
  param %w1 : f32[256,784] = randn(seed=1)
  param %b1 : f32[256] = randn(seed=2)
  param %w2 : f32[64,256] = randn(seed=3)
  %h = linear(%x, %w1, %b1)
  %a = relu(%h)
  %y = linear(%a, %w2)
  output %y
})";
  const TensorData x = TensorData::randn(DType::F32, {32, 784}, 4);
  Expected<std::vector<TensorData>> want = reference::run(parseOk(kMlp), {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status().message();
  const bool onednn = *cpu::onednnVersion() != '\0' && cpu::onednnEnabled();
  // Budgets: the default, none, and 128 KiB (the second layer's 64 KiB fits, the first's
  // 784 KiB does not).
  for (const uint64_t budget : {Session::Options{}.maxPackedWeightBytes, uint64_t{0}, uint64_t{128} << 10}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    Expected<Executable> exe = build(parseOk(kMlp), CompileOptions{});
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    Session::Options options;
    options.checkPlan = true;
    options.maxPackedWeightBytes = budget;
    Expected<Session> s = Session::create(std::move(exe).value(), options);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const int64_t packed = s->loadStats().packedWeightBytes;
    EXPECT_LE(static_cast<uint64_t>(packed), budget);
    if (!onednn || budget == 0) {
      EXPECT_EQ(packed, 0);
    } else if (budget == Session::Options{}.maxPackedWeightBytes) {
      EXPECT_GE(packed, int64_t{(256 * 784 + 64 * 256) * 4}) << "both layers' weights packed";
    } else {
      EXPECT_GT(packed, 0) << "the second layer's weights fit";
      EXPECT_LT(packed, int64_t{256 * 784 * 4}) << "the first layer's do not";
    }
    Expected<RunResult> r = s->run({{"x", Tensor(x)}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    const TensorData &got = r->outputs[0].tensor.data();
    ASSERT_EQ(got.type(), (*want)[0].type());
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_NEAR(got.at(i), (*want)[0].at(i), 1e-3 * (1 + std::fabs((*want)[0].at(i)))) << "element " << i;
  }
}

// The loader's limit on the weights together: checked on each weight's declared type before its
// bytes are viewed or copied, the weight that passes it named.
TEST(WeightsOnce, WeightsBeyondTheLoadersLimitAreRefused) {
  testutil::ScratchDir dir("WeightsOnce.limit");
  const fs::path file = dir.path() / "mlp.ferry";
  const Executable exe = compiledSmallMlp();
  ASSERT_TRUE(exe.save(file.string()).ok());
  size_t total = 0;
  for (const TensorData &w : exe.weights) total += w.byteSize();
  const auto limit = static_cast<int64_t>(total);
  EXPECT_TRUE(Executable::load(file.string(), {.maxTotalWeightBytes = limit}).ok());
  Expected<Executable> refused = Executable::load(file.string(), {.maxTotalWeightBytes = limit - 1});
  ASSERT_FALSE(refused.ok());
  const std::string message = refused.status().message();
  EXPECT_NE(message.find("the weights need more than the limit of " + std::to_string(limit - 1) +
                         " bytes in all (Executable::LoadOptions::maxTotalWeightBytes): weight 3 "),
            std::string::npos)
      << message;
  EXPECT_FALSE(
      Executable::deserialize(exe.serialize(), "mlp.ferry", {.maxTotalWeightBytes = 1}).ok());
}

}  // namespace
}  // namespace ferry
