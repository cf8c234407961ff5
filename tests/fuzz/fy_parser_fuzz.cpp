// tests/fuzz/fy_parser_fuzz.cpp — libFuzzer entry: any bytes through the .fy parser, and what
// parses must print and parse back to the same text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/parser.h"
#include "ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  ferry::ParseOptions options{.baseDir = "", .maxParamBytes = 1 << 14};
  ferry::Expected<ferry::Graph> g = ferry::parseGraph(text, "fuzz.fy", options);
  if (!g) return 0;
  std::string printed = ferry::printGraph(*g);
  ferry::Expected<ferry::Graph> again = ferry::parseGraph(printed, "fuzz.fy", options);
  FERRY_CHECK(again.ok()) << "printed graph does not parse:\n" << printed << again.status().message();
  FERRY_CHECK(ferry::printGraph(*again) == printed) << "round trip differs:\n" << printed;
  return 0;
}
