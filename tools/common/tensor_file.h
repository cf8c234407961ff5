// tools/common/tensor_file.h — a tensor file as the tools read it (ferry-run's inputs and
// expected outputs, ferry-compile's --input-value): an ONNX TensorProto (`.pb`, any case) or
// NumPy's `.npy` (any other name).
#pragma once

#include <string>
#include <string_view>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace ferry {

/// Whether `path` names a serialized TensorProto (`.pb`, any case).
bool isTensorProtoPath(std::string_view path);

/// Reads `path` onto the host: a TensorProto when isTensorProtoPath(path), else `.npy`. `name`,
/// when given, receives the TensorProto's name ("" when it has none, and for `.npy`).
/// `uint16AsBf16`: ONNX test data's bf16 stored as UINT16 bits (readTensorProto).
Expected<Tensor> readTensorFile(const std::string &path, std::string *name = nullptr,
                                bool uint16AsBf16 = false);

}  // namespace ferry
