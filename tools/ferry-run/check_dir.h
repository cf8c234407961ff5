// tools/ferry-run/check_dir.h — ferry-run --check-dir: a folder of ONNX test data (the layout of
// ONNX's backend tests, `test_data_set_0/`: input_0.pb, input_1.pb, ..., output_0.pb, ...), its
// inputs matched to the model's, and the outputs of a run compared with the expected ones.
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"
#include "runtime/session.h"
#include "tools/ferry-run/compare.h"

namespace ferry {

/// One tensor file of the folder.
struct DataFile {
  std::string file;  ///< its name in the folder: "input_0.pb"
  std::string name;  ///< the TensorProto's name; "" when it has none (and for `.npy`)
  Tensor tensor;
};

/// The tensors of a test-data folder, by their index K.
struct TestData {
  std::string dir;
  std::vector<DataFile> inputs;   ///< input_0, input_1, ...
  std::vector<DataFile> outputs;  ///< output_0, output_1, ...
};

/// Reads `dir`'s input_K and output_K files, each `.pb` (a TensorProto) or `.npy`, K = 0, 1, ...
/// with no gap; other files are left alone. Errors (code "usage", worded "--check-dir: ...") for
/// a folder that is missing or unreadable, none of these files or no output_K, a gap, an index
/// given as both `.pb` and `.npy`, and a file that does not read.
Expected<TestData> readTestData(const std::string &dir);

/// The model's inputs from `data`: each file gives the input its TensorProto names when there is
/// one, else the input at its position K. Errors (code "usage") for a count that differs from
/// the model's, and for two files that give one input. Also checks the count of output files.
/// `files`, when given, receives per input the file it comes from. Files named after an input in
/// `frozen` (one the importer fixed to that file's value, OnnxImportOptions::inputValues) are
/// not the executable's inputs and are left out.
Expected<std::vector<NamedTensor>> matchTestData(const TestData &data, const Executable &exe,
                                                 std::vector<std::string> *files = nullptr,
                                                 std::span<const std::string> frozen = {});

/// Compares `outputs` (the run's, in the model's order) with the expected files: each file
/// against the output its TensorProto names, else the one at its position. Prints a line per
/// output and a last line for all to `out`; returns how many outputs did not match.
/// Precondition: matchTestData(data, ...) succeeded for the executable that gave `outputs`.
int checkOutputs(const TestData &data, std::span<const NamedTensor> outputs, Tolerance tol,
                 std::ostream &out);

}  // namespace ferry
