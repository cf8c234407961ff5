// tests/fuzz/executable_fuzz.cpp — libFuzzer entry: any bytes as a saved executable (`.ferry`),
// through the loader, Session::create and one run. The header's payload length and checksum are
// rewritten to fit the bytes first, so that a mutation reaches the parser and validate() instead
// of stopping at the checksum (which catches every single-byte change: docs/artifact.md).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/executable.h"
#include "runtime/session.h"

namespace {

// The checksum the loader computes: 64-bit FNV-1a of the payload (docs/artifact.md).
uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

void writeLE(std::string &bytes, size_t at, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) bytes[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

// One kernel thread: handing blocks to a pool's workers cost a quarter of the time in scheduling
// and finds nothing the single-threaded run does not (TSan covers the pool, RELIABILITY.md §6).
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  setenv("FERRY_NUM_THREADS", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  constexpr size_t kHeader = 32, kLengthAt = 16, kChecksumAt = 24;
  if (bytes.size() >= kHeader) {
    writeLE(bytes, kLengthAt, bytes.size() - kHeader);
    writeLE(bytes, kChecksumAt, fnv1a(std::string_view(bytes).substr(kHeader)));
  }
  ferry::Expected<ferry::Executable> exe = ferry::Executable::deserialize(bytes, "fuzz.ferry");
  if (!exe) return 0;
  // One run on zeros, when every value is small: what loads must run or fail with a Status. The
  // bound keeps a run of a mutated conv net from costing a thousand loader runs (the loader and
  // validate() are what the mutations reach; the kernels have their own conformance suite).
  constexpr int64_t kMaxElements = int64_t{1} << 16;
  int64_t elements = 0;
  for (const ferry::Slot &slot : exe->slots) {
    if (slot.type.numel() > kMaxElements - elements) return 0;
    elements += slot.type.numel();
  }
  std::vector<ferry::NamedTensor> inputs;
  for (int32_t id : exe->inputs) {
    const ferry::Slot &slot = exe->slots[static_cast<size_t>(id)];
    inputs.push_back({slot.name, ferry::Tensor::zeros(slot.type.dtype, slot.type.shape)});
  }
  ferry::Session::Options options;
  options.checkPlan = true;
  ferry::Expected<ferry::Session> session = ferry::Session::create(std::move(exe).value(), options);
  if (!session) return 0;
  ferry::Expected<ferry::RunResult> result = session->run(inputs);
  (void)result;  // outputs or an error; only a crash, a leak or a sanitizer report is a finding
  return 0;
}
