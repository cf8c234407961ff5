// frontend/onnx/registry.cpp — the one converter table, assembled from the ops_*.cpp files' lists
// and sorted by op type so the driver finds a converter by binary search.
#include <algorithm>
#include <vector>

#include "frontend/onnx/convert.h"
#include "ir/status.h"

namespace ferry::onnx_import {

std::span<const ConverterEntry> converters() {
  static const std::vector<ConverterEntry> table = [] {
    std::vector<ConverterEntry> all;
    for (auto list : {elementwiseConverters(), shapeConverters(), nnConverters()})
      all.insert(all.end(), list.begin(), list.end());
    std::sort(all.begin(), all.end(),
              [](const ConverterEntry &a, const ConverterEntry &b) { return a.opType < b.opType; });
    for (size_t i = 1; i < all.size(); ++i)
      FERRY_CHECK(all[i - 1].opType != all[i].opType)
          << "two converters for ONNX op " << all[i].opType;
    return all;
  }();
  return table;
}

// Placeholders until ops_shape.cpp and ops_nn.cpp land (branch onnx-ops): remove these two
// definitions when merging that branch.
std::span<const ConverterEntry> shapeConverters() { return {}; }
std::span<const ConverterEntry> nnConverters() { return {}; }

}  // namespace ferry::onnx_import
