// ir/npy.h — NumPy .npy files (format versions 1.0-3.0, little-endian, C order).
#pragma once

#include <string>
#include <string_view>

#include "ir/status.h"
#include "ir/tensor_data.h"

namespace ferry {

/// Reads an .npy file of one of ferry's dtypes (bf16 is stored as numpy's '<V2' raw 2-byte
/// type when written by ferry). A bad magic, header, dtype, Fortran order, or a size that does
/// not match the header is an error naming the file and what was expected.
Expected<TensorData> readNpy(const std::string &path);
Expected<TensorData> parseNpy(std::string_view bytes, std::string_view fileName);
Status writeNpy(const TensorData &t, const std::string &path);
std::string serializeNpy(const TensorData &t);

}  // namespace ferry
