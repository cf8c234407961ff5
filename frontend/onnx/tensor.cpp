// frontend/onnx/tensor.cpp — ONNX TensorProtos to ferry's host tensors: data types, raw and typed
// data fields, external data files, and the `.pb` tensor files of ONNX test data.
//
// Everything here reads outside bytes: sizes are checked against what the tensor declares
// before anything is allocated, and a declared size beyond the caller's limit is an error
// (code "limit") without allocating it.
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "frontend/onnx/convert.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/tensor_impl.h"
#include "onnx/onnx_pb.h"

namespace ferry::onnx_import {

static_assert(
    std::endian::native == std::endian::little,
    "frontend/onnx copies little-endian raw_data verbatim; a big-endian host needs swaps");

namespace {

using onnx::TensorProto;

Diagnostic err(std::string code, const Location &loc, std::string message) {
  return Diagnostic{Severity::Error, std::move(code), loc, std::move(message), {}, {}};
}

// Copies `n` typed-field values into `out` as dtype `t` (int32_data holds f16/bf16 bit patterns,
// bools and small integers, as the ONNX spec says).
template <class Field> void copyField(const Field &field, TensorData &out) {
  DType t = out.dtype();
  std::byte *p = out.mutableBytes().data();
  size_t size = dtypeSize(t);
  for (int i = 0; i < field.size(); ++i) {
    auto v = field.Get(i);
    std::byte *at = p + static_cast<size_t>(i) * size;
    if (t == DType::F16 || t == DType::BF16) {
      auto bits = static_cast<uint16_t>(v);
      std::memcpy(at, &bits, 2);
    } else if (t == DType::F32) {
      auto f = static_cast<float>(v);
      std::memcpy(at, &f, 4);
    } else if (t == DType::F64) {
      auto d = static_cast<double>(v);
      std::memcpy(at, &d, 8);
    } else {
      storeIntWrapping(t, at, static_cast<int64_t>(v));
    }
  }
}

Expected<TensorData> readExternal(const TensorProto &t, const TensorType &type,
                                  const std::string &baseDir, const Location &loc,
                                  const std::string &what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : t.external_data()) {
    auto number = [&](int64_t &into) -> bool {
      const std::string &s = entry.value();
      if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
        return false;
      into = std::stoll(s);
      return true;
    };
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      if (!number(offset))
        return err("onnx", loc,
                   what + ": external data offset '" + entry.value() +
                       "' is not a non-negative integer");
    } else if (entry.key() == "length") {
      if (!number(length))
        return err("onnx", loc,
                   what + ": external data length '" + entry.value() +
                       "' is not a non-negative integer");
    }
    // "checksum" and other keys carry nothing ferry needs.
  }
  if (location.empty()) return err("onnx", loc, what + ": external data without a 'location'");
  if (!safeRelativePath(location))
    return err(
        "onnx", loc,
        what + ": external data location '" + location +
            "' must be a relative path inside the model's folder (no absolute path, no '..')");
  if (baseDir.empty())
    return err("onnx", loc,
               what + ": external data '" + location +
                   "' cannot be read: the model was not read from a file");
  const auto bytes = static_cast<int64_t>(type.byteSize());
  if (length >= 0 && length != bytes)
    return err("onnx", loc,
               what + ": external data length " + std::to_string(length) + " disagrees with " +
                   type.str() + " (" + std::to_string(bytes) + " bytes)");
  std::filesystem::path path = std::filesystem::path(baseDir) / location;
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::is_regular_file(status))
    return err("onnx", loc,
               what + ": external data file '" + path.string() + "' is missing or not a file");
  auto fileSize = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec || offset > fileSize || fileSize - offset < bytes)
    return err("onnx", loc,
               what + ": external data file '" + path.string() + "' has " +
                   std::to_string(fileSize) + " bytes, too few for " + std::to_string(bytes) +
                   " bytes at offset " + std::to_string(offset));
  TensorData out(type.dtype, type.shape);
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  in.read(reinterpret_cast<char *>(out.mutableBytes().data()), bytes);
  if (!in && bytes > 0)
    return err("onnx", loc, what + ": cannot read external data file '" + path.string() + "'");
  return out;
}

}  // namespace

std::optional<DType> dtypeOf(int32_t onnxType) {
  switch (onnxType) {
    case TensorProto::FLOAT: return DType::F32;
    case TensorProto::UINT8: return DType::U8;
    case TensorProto::INT8: return DType::I8;
    case TensorProto::INT32: return DType::I32;
    case TensorProto::INT64: return DType::I64;
    case TensorProto::BOOL: return DType::Bool;
    case TensorProto::FLOAT16: return DType::F16;
    case TensorProto::DOUBLE: return DType::F64;
    case TensorProto::BFLOAT16: return DType::BF16;
    default: return std::nullopt;
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto_DataType_IsValid(onnxType))
    return onnx::TensorProto_DataType_Name(static_cast<TensorProto::DataType>(onnxType));
  return "data type " + std::to_string(onnxType);
}

bool safeRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.front() == '\\') return false;
  if (path.find(':') != std::string_view::npos) return false;  // C:\..., URLs
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return false;
    start = end + 1;
  }
  return true;
}

Expected<TensorType> declaredType(const TensorProto &t, int64_t maxBytes, const Location &loc,
                                  std::string_view what) {
  const std::string name(what);
  std::optional<DType> dtype = dtypeOf(t.data_type());
  if (!dtype)
    return err("onnx", loc,
               name + " has data type " + onnxTypeName(t.data_type()) +
                   ", which ferry does not support (it has " + std::string(dtypeNameList()) + ")");
  TensorType type{*dtype, {}};
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : t.dims()) {
    if (d < 0) return err("onnx", loc, name + " has a negative dim " + std::to_string(d));
    type.shape.push_back(d);
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      overflow = true;
    else
      n *= d;
  }
  const auto size = static_cast<int64_t>(dtypeSize(*dtype));
  if (overflow || n > std::numeric_limits<int64_t>::max() / size)
    return err("limit", loc,
               name + " declares shape " + shapeStr(type.shape) + ", whose size overflows 64 bits");
  if (n * size > maxBytes)
    return err("limit", loc,
               name + " declares " + type.str() + " (" + std::to_string(n * size) +
                   " bytes), more than the limit of " + std::to_string(maxBytes) + " bytes");
  return type;
}

Expected<TensorData> tensorFromProto(const TensorProto &t, const std::string &baseDir,
                                     int64_t maxBytes, const Location &loc, std::string_view what) {
  Expected<TensorType> declared = declaredType(t, maxBytes, loc, what);
  if (!declared) return std::move(declared).takeStatus();
  const TensorType &type = *declared;
  const std::string name(what);
  if (t.has_segment())
    return err("onnx", loc, name + " is segmented, which ferry does not support");
  if (t.data_location() == TensorProto::EXTERNAL) return readExternal(t, type, baseDir, loc, name);
  const int64_t n = type.numel();
  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if (static_cast<int64_t>(raw.size()) != static_cast<int64_t>(type.byteSize()))
      return err("onnx", loc,
                 name + " has " + std::to_string(raw.size()) + " bytes of raw_data, but " +
                     type.str() + " takes " + std::to_string(type.byteSize()));
    TensorData out(type.dtype, type.shape);
    if (!raw.empty()) std::memcpy(out.mutableBytes().data(), raw.data(), raw.size());
    return out;
  }
  // The typed field this dtype is stored in, and how many values it holds.
  int count = 0;
  std::string field;
  switch (type.dtype) {
    case DType::F32:
      count = t.float_data_size();
      field = "float_data";
      break;
    case DType::F64:
      count = t.double_data_size();
      field = "double_data";
      break;
    case DType::I64:
      count = t.int64_data_size();
      field = "int64_data";
      break;
    default:
      count = t.int32_data_size();
      field = "int32_data";
      break;
  }
  if (count != n)
    return err("onnx", loc,
               name + " is " + type.str() + " (" + std::to_string(n) + " values) but its " + field +
                   " holds " + std::to_string(count));
  TensorData out(type.dtype, type.shape);
  switch (type.dtype) {
    case DType::F32: copyField(t.float_data(), out); break;
    case DType::F64: copyField(t.double_data(), out); break;
    case DType::I64: copyField(t.int64_data(), out); break;
    default: copyField(t.int32_data(), out); break;
  }
  return out;
}

}  // namespace ferry::onnx_import

namespace ferry {

Expected<TensorData> readTensorProto(std::span<const std::byte> bytes, std::string_view fileName,
                                     std::string *name, bool uint16AsBf16) {
  Location loc{FileName(fileName), 0, 0, {}};
  onnx::TensorProto t;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return makeError("onnx", "not a serialized ONNX TensorProto", loc);
  if (name) *name = t.name();
  if (uint16AsBf16 && t.data_type() == onnx::TensorProto::UINT16)
    t.set_data_type(onnx::TensorProto::BFLOAT16);
  // A test-data file is read whole: no limit beyond what its bytes already hold.
  return onnx_import::tensorFromProto(t, {}, std::numeric_limits<int64_t>::max(), loc,
                                      std::string(fileName) + ": tensor '" + t.name() + "'");
}

Expected<TensorData> readTensorProtoFile(const std::string &path, std::string *name,
                                         bool uint16AsBf16) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("io", "cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return makeError("io", "cannot read '" + path + "'");
  return readTensorProto(std::as_bytes(std::span(bytes)), path, name, uint16AsBf16);
}

bool isOnnxPath(std::string_view path) {
  if (path.size() < 5) return false;
  std::string ext(path.substr(path.size() - 5));
  for (char &c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return ext == ".onnx";
}

}  // namespace ferry
