// tools/common/load_model.cpp — reading a model by its kind, and the --shape flag.
#include "tools/common/load_model.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>
#include <string_view>

#include "tools/common/compile_flags.h"
#include "tools/common/tensor_file.h"

namespace ferry {

namespace {

constexpr std::string_view kFlag = "--shape";
constexpr std::string_view kExpected = "expected NAME=D0,D1,... (e.g. --shape x=1,784)";
// A dim no tensor reaches, so that a typo fails here and not as a huge allocation.
constexpr int64_t kMaxDim = int64_t{1} << 40;

// "1,784" as dims; errors name the input.
Status parseDims(std::string_view list, const std::string &name, std::vector<int64_t> &dims) {
  const std::string flag = std::string(kFlag) + " " + name;
  if (list.empty()) return flagError(flag, "no dims after '=': " + std::string(kExpected));
  const std::string whole(list);
  while (true) {
    const size_t comma = list.find(',');
    const std::string item(list.substr(0, comma));
    if (item.empty())
      return flagError(flag, "empty dim in '" + whole + "': " + std::string(kExpected));
    std::optional<int64_t> dim;
    FERRY_TRY(integerFlag(item, flag, 0, dim, kMaxDim));
    dims.push_back(*dim);
    if (comma == std::string_view::npos) return {};
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

void addShapeFlag(CLI::App &app, std::vector<std::string> &specs) {
  app.add_option("--shape", specs,
                 "ONNX models: input NAME's shape, its symbolic dims fixed; repeatable")
      ->type_name("NAME=D0,D1,...")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Status parseShapeFlags(const std::vector<std::string> &specs,
                       std::map<std::string, std::vector<int64_t>, std::less<>> &shapes) {
  for (const std::string &spec : specs) {
    // Dims hold no '=', so the last one ends the name (ONNX names may hold anything).
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos)
      return flagError(kFlag, std::string(kExpected) + ", got '" + spec + "'");
    std::string name = spec.substr(0, eq);
    if (name.empty())
      return flagError(kFlag,
                       "no input name before '=' in '" + spec + "': " + std::string(kExpected));
    if (shapes.contains(name)) return flagError(kFlag, "input '" + name + "' is given twice");
    std::vector<int64_t> dims;
    FERRY_TRY(parseDims(std::string_view(spec).substr(eq + 1), name, dims));
    shapes.emplace(std::move(name), std::move(dims));
  }
  return {};
}

void addInputValueFlag(CLI::App &app, std::vector<std::string> &specs) {
  app.add_option("--input-value", specs,
                 "ONNX models: fix input NAME at import to FILE's value (.pb or .npy)")
      ->type_name("NAME=FILE")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Status readInputValueFlags(const std::vector<std::string> &specs, const std::string &model,
                           std::map<std::string, TensorData, std::less<>> &values) {
  constexpr std::string_view flag = "--input-value";
  if (!specs.empty() && !isOnnxPath(model))
    return flagError(flag, "applies to ONNX models (.onnx); '" + model +
                               "' is not one: its inputs are all inputs at run time");
  for (const std::string &spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos)
      return flagError(flag, "expected NAME=FILE.pb or NAME=FILE.npy, got '" + spec + "'");
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    if (name.empty()) return flagError(flag, "no input name before '=' in '" + spec + "'");
    if (file.empty()) return flagError(std::string(flag) + " " + name, "no file after '='");
    if (values.contains(name)) return flagError(flag, "input '" + name + "' is given twice");
    Expected<Tensor> data = readTensorFile(file);
    if (!data) return flagError(std::string(flag) + " " + name, oneLine(data.status()));
    values.emplace(std::move(name), data->data());
  }
  return {};
}

void addParamLimitFlag(CLI::App &app, std::string &value) {
  app.add_option("--max-total-param-bytes", value,
                 "Refuse models whose params take more bytes in all (default 2^34)")
      ->type_name("N");
}

Status applyParamLimitFlag(const std::string &value, LoadOptions &options) {
  std::optional<int64_t> limit;
  FERRY_TRY(integerFlag(value, "--max-total-param-bytes", 1, limit));
  if (!limit) return {};
  options.parse.maxTotalParamBytes = *limit;
  options.onnx.maxTotalParamBytes = *limit;
  options.executable.maxTotalWeightBytes = *limit;
  return {};
}

Device onnxInputDevice(const CompileOptions &c) {
  const bool host = std::find(c.devices.begin(), c.devices.end(), Device::cpu()) != c.devices.end();
  return host ? Device::cpu() : c.target;
}

Status checkShapesApply(const std::vector<std::string> &specs, const std::string &model) {
  if (specs.empty() || isOnnxPath(model)) return {};
  return flagError(kFlag, "applies to ONNX models (.onnx), whose inputs may have symbolic dims; '" +
                              model + "' is not one: it declares the shapes of its inputs");
}

Expected<Graph> loadModel(const std::string &path, const LoadOptions &options) {
  if (isOnnxPath(path)) return importOnnxFile(path, options.onnx);
  return parseFile(path, options.parse);
}

bool allOfCode(const Status &s, std::string_view code) {
  const std::vector<Diagnostic> &ds = s.diagnostics();
  return !ds.empty() &&
         std::all_of(ds.begin(), ds.end(), [&](const Diagnostic &d) { return d.code == code; });
}

}  // namespace ferry
