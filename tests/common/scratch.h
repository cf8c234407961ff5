// tests/common/scratch.h — scratch folders for tests that write files.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace ferry::testutil {

/// A fresh, empty folder `ferry.<name>.<pid>` in the system's temporary folder, removed with
/// everything in it when this object goes. The process id keeps test runs apart that share a
/// machine (two builds, two CI jobs): with a fixed name, one run's set-up deleted the files
/// another run was reading.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string &name)
      : path_(std::filesystem::temp_directory_path() /
              ("ferry." + name + "." + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ScratchDir(ScratchDir &&other) noexcept : path_(std::exchange(other.path_, {})) {}
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;
  ~ScratchDir() {
    std::error_code ignored;  // a test may have removed it already
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }

  const std::filesystem::path &path() const { return path_; }
  std::string str() const { return path_.string(); }
  template <class T> friend std::filesystem::path operator/(const ScratchDir &d, const T &name) {
    return d.path_ / name;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace ferry::testutil
