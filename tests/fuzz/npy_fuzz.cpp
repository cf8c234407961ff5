// tests/fuzz/npy_fuzz.cpp — libFuzzer entry: any bytes through the .npy reader; what reads
// must write back to the same bytes' tensor.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  ferry::Expected<ferry::TensorData> t = ferry::parseNpy(bytes, "fuzz.npy");
  if (!t) return 0;
  ferry::Expected<ferry::TensorData> again = ferry::parseNpy(ferry::serializeNpy(*t), "again.npy");
  FERRY_CHECK(again.ok() && *again == *t) << "npy round trip differs";
  return 0;
}
