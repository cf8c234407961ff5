// frontend/onnx/import.cpp — placeholder until the importer lands (branch onnx-core).
#include "frontend/onnx/onnx_import.h"

namespace ferry {

Expected<Graph> importOnnxFile(const std::string &path, const OnnxImportOptions &) {
  return makeError("onnx", path + ": the ONNX importer is not built yet");
}
Expected<Graph> importOnnx(std::span<const std::byte>, std::string_view fileName,
                           const std::string &, const OnnxImportOptions &) {
  return makeError("onnx", std::string(fileName) + ": the ONNX importer is not built yet");
}
Expected<TensorData> readTensorProtoFile(const std::string &path, std::string *) {
  return makeError("onnx", path + ": the ONNX importer is not built yet");
}
Expected<TensorData> readTensorProto(std::span<const std::byte>, std::string_view fileName,
                                     std::string *) {
  return makeError("onnx", std::string(fileName) + ": the ONNX importer is not built yet");
}
bool isOnnxPath(std::string_view path) {
  if (path.size() < 5) return false;
  std::string ext(path.substr(path.size() - 5));
  for (char &c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return ext == ".onnx";
}

}  // namespace ferry
