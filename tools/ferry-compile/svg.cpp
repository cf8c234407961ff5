// tools/ferry-compile/svg.cpp — DOT to SVG through Graphviz's `dot`: the DOT goes to a temporary
// file and `dot` runs as a child process with an argument vector (no shell, so no quoting of
// paths), its stdout either ours or the output file.
#include "tools/ferry-compile/svg.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

extern char **environ;

namespace ferry {

namespace {

// `name` found in a directory of PATH, or "".
std::string onPath(std::string_view name) {
  const char *path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + std::string(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// A temporary file holding `text`, removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(const std::string &text) {
    std::string pattern = (std::filesystem::temp_directory_path() / "ferry-XXXXXX.dot").string();
    const int fd = ::mkstemps(pattern.data(), 4);
    if (fd < 0) return;
    ::close(fd);
    path_ = pattern;
    std::ofstream out(path_, std::ios::binary);
    out << text;
    ok_ = static_cast<bool>(out.flush());
  }
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  bool ok() const { return ok_; }
  const std::string &path() const { return path_; }

 private:
  std::string path_;
  bool ok_ = false;
};

}  // namespace

Status renderSvg(const std::string &dot, const std::string &path) {
  const std::string program = onPath("dot");
  if (program.empty())
    return makeError(
        "io", "svg needs Graphviz's 'dot' program, which is not on PATH (Debian: apt-get "
              "install graphviz; `make demo` installs it); --emit dot writes the DOT source");
  TempFile input(dot);
  if (!input.ok())
    return makeError("io",
                     std::string("cannot write a temporary file for dot: ") + std::strerror(errno));
  const bool toStdout = path.empty() || path == "-";
  std::vector<std::string> args = {program, "-Tsvg", input.path()};
  if (!toStdout) args.insert(args.end(), {"-o", path});
  std::vector<char *> argv;
  for (std::string &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (int e = ::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ); e != 0)
    return makeError("io", "cannot run " + program + ": " + std::strerror(e));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return makeError("io", std::string("waiting for dot: ") + std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return makeError("io",
                     "dot failed (" +
                         (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                            : std::string("killed by a signal")) +
                         ")" + (toStdout ? "" : " writing '" + path + "'"));
  return {};
}

}  // namespace ferry
