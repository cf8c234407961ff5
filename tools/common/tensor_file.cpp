// tools/common/tensor_file.cpp — reading a `.pb` or `.npy` tensor by its extension.
#include "tools/common/tensor_file.h"

#include "frontend/onnx/onnx_import.h"

namespace ferry {

bool isTensorProtoPath(std::string_view path) {
  if (path.size() < 3) return false;
  const std::string_view ext = path.substr(path.size() - 3);
  return ext[0] == '.' && (ext[1] == 'p' || ext[1] == 'P') && (ext[2] == 'b' || ext[2] == 'B');
}

Expected<Tensor> readTensorFile(const std::string &path, std::string *name, bool uint16AsBf16) {
  if (name != nullptr) name->clear();
  if (!isTensorProtoPath(path)) return Tensor::fromNpy(path);
  Expected<TensorData> data = readTensorProtoFile(path, name, uint16AsBf16);
  if (!data) return data.status();
  return Tensor(std::move(data).value());
}

}  // namespace ferry
