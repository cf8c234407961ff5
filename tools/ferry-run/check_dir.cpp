// tools/ferry-run/check_dir.cpp — reading a folder of ONNX test data, matching it to the model,
// comparing the outputs.
#include "tools/ferry-run/check_dir.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <ostream>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "tools/common/compile_flags.h"
#include "tools/common/tensor_file.h"

namespace ferry {

namespace {

namespace fs = std::filesystem;

Status checkDirError(const std::string &why) { return makeError("usage", "--check-dir: " + why); }

// "input_12.pb" -> {"input", 12}; false for names of other files.
bool parseDataName(const std::string &file, std::string &kind, int64_t &k) {
  const size_t us = file.find('_'), dot = file.rfind('.');
  if (us == std::string::npos || dot == std::string::npos || dot < us) return false;
  kind = file.substr(0, us);
  if (kind != "input" && kind != "output") return false;
  const std::string ext = file.substr(dot);
  if (!isTensorProtoPath(ext) && ext != ".npy") return false;
  const char *first = file.data() + us + 1, *last = file.data() + dot;
  auto [end, ec] = std::from_chars(first, last, k);
  return ec == std::errc() && end == last && first != last && k >= 0;
}

// The files of one kind, by index: each index once, 0..n-1 with no gap.
Status readKind(const std::string &dir, const std::string &kind,
                const std::map<int64_t, std::vector<std::string>> &byIndex,
                std::vector<DataFile> &out) {
  int64_t expected = 0;
  for (const auto &[k, files] : byIndex) {
    if (k != expected)
      return checkDirError("'" + dir + "' has " + files.front() + " but no " + kind + "_" +
                           std::to_string(expected) + ".pb: expected " + kind +
                           "_K files numbered from 0 with no gap");
    if (files.size() > 1)
      return checkDirError("'" + dir + "' has both " + files[0] + " and " + files[1] +
                           ": expected one file for " + kind + " " + std::to_string(k));
    DataFile f{files.front(), "", Tensor()};
    const std::string path = (fs::path(dir) / f.file).string();
    // ONNX's test data stored bf16 as UINT16 bits before onnx 1.14; ferry has no u16.
    Expected<Tensor> t = readTensorFile(path, &f.name, /*uint16AsBf16=*/true);
    if (!t) {
      const std::string why = oneLine(t.status());
      return checkDirError(why.starts_with(path) ? why : path + ": " + why);
    }
    f.tensor = std::move(t).value();
    out.push_back(std::move(f));
    ++expected;
  }
  return {};
}

std::string plural(size_t n, const std::string &word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// "x: f32[1,3] @cpu, y: ..." for the slots `ids` of `exe`.
std::string slotList(const Executable &exe, const std::vector<int32_t> &ids) {
  std::string s;
  for (int32_t id : ids) {
    const Slot &slot = exe.slots[static_cast<size_t>(id)];
    s += (s.empty() ? "" : ", ") + slot.name + ": " + slot.type.str();
  }
  return s.empty() ? "none" : s;
}

// Which of `names` (the model's, in order) each file stands for: the name it carries when that
// is one of them, else its position. -1 and `why` set when two files land on one.
std::vector<size_t> assign(const std::vector<DataFile> &files,
                           const std::vector<std::string> &names, const std::string &kind,
                           std::string &why) {
  std::vector<size_t> slot(files.size());
  std::vector<int> taker(names.size(), -1);
  std::unordered_map<std::string_view, size_t> byName;  // a name listed twice: its last place
  for (size_t j = 0; j < names.size(); ++j) byName[names[j]] = j;
  for (size_t k = 0; k < files.size(); ++k) {
    size_t i = k;
    if (auto named = byName.find(files[k].name); !files[k].name.empty() && named != byName.end())
      i = named->second;
    if (taker[i] >= 0) {
      const DataFile &other = files[static_cast<size_t>(taker[i])];
      why = other.file + " and " + files[k].file + " both give " + kind + " '" + names[i] +
            "' (a file names its " + kind + " by its TensorProto's name, else by its position)";
      return {};
    }
    taker[i] = static_cast<int>(k);
    slot[k] = i;
  }
  return slot;
}

std::vector<std::string> slotNames(const Executable &exe, const std::vector<int32_t> &ids) {
  std::vector<std::string> names;
  for (int32_t id : ids) names.push_back(exe.slots[static_cast<size_t>(id)].name);
  return names;
}

}  // namespace

Expected<TestData> readTestData(const std::string &dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return checkDirError("no folder '" + dir + "'");
  if (!fs::is_directory(dir, ec))
    return checkDirError("'" + dir +
                         "' is not a folder; expected a folder of ONNX test data "
                         "(input_0.pb, ..., output_0.pb, ...)");
  std::map<int64_t, std::vector<std::string>> inputs, outputs;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return checkDirError("cannot read '" + dir + "': " + ec.message());
  for (; it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    std::string kind;
    int64_t k = 0;
    if (!parseDataName(file, kind, k)) continue;
    (kind == "input" ? inputs : outputs)[k].push_back(file);
  }
  if (ec) return checkDirError("cannot read '" + dir + "': " + ec.message());
  for (auto *m : {&inputs, &outputs})
    for (auto &[k, files] : *m) std::sort(files.begin(), files.end());
  if (inputs.empty() && outputs.empty())
    return checkDirError("'" + dir +
                         "' holds no input_K.pb or output_K.pb files; expected a "
                         "folder of ONNX test data (input_0.pb, ..., output_0.pb, ...)");
  if (outputs.empty())
    return checkDirError("'" + dir +
                         "' holds no output_K.pb files: nothing to compare the "
                         "outputs with");
  TestData data{dir, {}, {}};
  FERRY_TRY(readKind(dir, "input", inputs, data.inputs));
  FERRY_TRY(readKind(dir, "output", outputs, data.outputs));
  return data;
}

Expected<std::vector<NamedTensor>> matchTestData(const TestData &all, const Executable &exe,
                                                 std::vector<std::string> *files,
                                                 std::span<const std::string> frozen) {
  TestData data = all;
  std::erase_if(data.inputs, [&](const DataFile &f) {
    return !f.name.empty() && std::find(frozen.begin(), frozen.end(), f.name) != frozen.end();
  });
  if (data.inputs.size() != exe.inputs.size())
    return checkDirError("'" + data.dir + "' has " + plural(data.inputs.size(), "input file") +
                         " (input_K.pb), the model has " + plural(exe.inputs.size(), "input") +
                         ": " + slotList(exe, exe.inputs));
  if (data.outputs.size() != exe.outputs.size())
    return checkDirError("'" + data.dir + "' has " + plural(data.outputs.size(), "output file") +
                         " (output_K.pb), the model has " + plural(exe.outputs.size(), "output") +
                         ": " + slotList(exe, exe.outputs));
  std::string why;
  const std::vector<std::string> inputNames = slotNames(exe, exe.inputs);
  const std::vector<size_t> slot = assign(data.inputs, inputNames, "input", why);
  if (!why.empty()) return checkDirError("in '" + data.dir + "', " + why);
  if (assign(data.outputs, slotNames(exe, exe.outputs), "output", why); !why.empty())
    return checkDirError("in '" + data.dir + "', " + why);
  std::vector<NamedTensor> inputs(exe.inputs.size());
  if (files != nullptr) files->assign(exe.inputs.size(), "");
  for (size_t k = 0; k < data.inputs.size(); ++k) {
    inputs[slot[k]] = {inputNames[slot[k]], data.inputs[k].tensor};
    if (files != nullptr) (*files)[slot[k]] = data.inputs[k].file;
  }
  return inputs;
}

int checkOutputs(const TestData &data, std::span<const NamedTensor> outputs, Tolerance tol,
                 std::ostream &out) {
  std::vector<std::string> names;
  for (const NamedTensor &o : outputs) names.push_back(o.name);
  std::string why;
  const std::vector<size_t> slot = assign(data.outputs, names, "output", why);
  FERRY_CHECK(why.empty() && slot.size() == outputs.size()) << "outputs not matched: " << why;
  int failed = 0;
  for (size_t k = 0; k < data.outputs.size(); ++k) {
    const NamedTensor &got = outputs[slot[k]];
    const DataFile &expected = data.outputs[k];
    // Outputs left on a device (--outputs-on-device) are compared on the host.
    Expected<Tensor> host = got.tensor.to(Device::cpu());
    FERRY_CHECK(host.ok()) << "an output does not copy to the host";
    const Comparison c = compareTensors(host->data(), expected.tensor.data(), tol);
    if (!c.pass()) ++failed;
    out << "check  " << got.name << " vs " << expected.file << ": "
        << describeComparison(c, host->data(), expected.tensor.data()) << "\n";
  }
  std::ostringstream tolText;
  tolText << "rtol " << tol.rtol << ", atol " << tol.atol;
  if (failed == 0)
    out << "check  pass: every output (" << outputs.size() << ") matches '" << data.dir << "' ("
        << tolText.str() << ")\n";
  else
    out << "check  FAIL: " << failed << " of " << outputs.size() << " outputs"
        << " differ from '" << data.dir << "' (" << tolText.str() << ")\n";
  return failed;
}

}  // namespace ferry
