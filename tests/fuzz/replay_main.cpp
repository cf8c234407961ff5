// tests/fuzz/replay_main.cpp — runs a libFuzzer entry point (LLVMFuzzerTestOneInput) once on each
// file named on the command line or found in the folders named there, so that ctest replays the
// seed corpora and every input a fuzzer ever crashed ferry with (tests/fuzz/regressions/<kind>/)
// with the project's own compiler, no clang needed. Fuzzing itself is scripts/fuzz.sh.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      for (const auto &e : fs::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::cerr << "replay: no file or folder '" << p.string() << "'\n";
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path &f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::cout << "replay: " << files.size() << " inputs, no crash\n";
  return files.empty() ? 1 : 0;
}
