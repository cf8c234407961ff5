// frontend/onnx/tensor_impl.h — ONNX tensor helpers shared by the driver and tensor.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/status.h"
#include "ir/types.h"

namespace onnx {
class TensorProto;
}

namespace ferry::onnx_import {

/// The bytes a TensorProto declares (its dims times its dtype's size), checked without touching
/// its data: a known dtype, dims >= 0, no int64 overflow, at most `maxBytes`. `what` names it.
Expected<TensorType> declaredType(const onnx::TensorProto &t, int64_t maxBytes,
                                  const Location &loc, std::string_view what);

/// Whether `path` (an external data `location`) stays inside its model's folder: relative, and
/// no `..` component.
bool safeRelativePath(std::string_view path);

}  // namespace ferry::onnx_import
