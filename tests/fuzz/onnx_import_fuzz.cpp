// tests/fuzz/onnx_import_fuzz.cpp — libFuzzer entry: any bytes through the ONNX importer (as a
// model and as a TensorProto). A model that imports must verify, and its `.fy` text must parse
// back to the same text (ONNX names such as `%"onnx::MatMul_84"` included).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "frontend/onnx/onnx_import.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte *>(data), size);

  // Small limits: a declared 10 GB initializer must be refused before anything is allocated,
  // and the fuzzer's memory limit catches an allocation that is not.
  ferry::OnnxImportOptions options;
  options.maxParamBytes = int64_t{1} << 20;
  options.maxTotalParamBytes = int64_t{1} << 22;
  ferry::Expected<ferry::Graph> g = ferry::importOnnx(bytes, "fuzz.onnx", "", options);
  if (g) {
    ferry::Status verified = ferry::verify(*g);
    FERRY_CHECK(verified.ok()) << "an imported graph does not verify:\n" << verified.message();
#ifndef FERRY_FUZZ_SKIP_ROUNDTRIP  // scripts/fuzz.sh --no-roundtrip: the importer alone
    // Locations are left out: an ONNX node's location is not a `.fy` position.
    ferry::PrintOptions print{.locations = false};
    std::string printed = ferry::printGraph(*g, print);
    ferry::ParseOptions parse{.baseDir = "", .maxParamBytes = int64_t{1} << 22};
    ferry::Expected<ferry::Graph> again = ferry::parseGraph(printed, "fuzz.fy", parse);
    FERRY_CHECK(again.ok()) << "an imported graph's text does not parse:\n"
                            << printed << again.status().message();
    FERRY_CHECK(ferry::printGraph(*again, print) == printed)
        << "an imported graph's text does not round-trip:\n"
        << printed;
#endif
  }

  ferry::Expected<ferry::TensorData> t = ferry::readTensorProto(bytes, "fuzz.pb");
  (void)t;  // a value or an error; only a crash or a leak is a finding
  return 0;
}
