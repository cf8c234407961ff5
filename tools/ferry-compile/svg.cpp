// tools/ferry-compile/svg.cpp — DOT to SVG through Graphviz's `dot`: the DOT goes to a temporary
// file and `dot` runs as a child process with an argument vector (no shell, so no quoting of
// paths), its stdout and stderr into temporary files that are read back.
#include "tools/ferry-compile/svg.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
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
  explicit TempFile(const std::string &text, const char *suffix) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("ferry-XXXXXX" + std::string(suffix))).string();
    const int fd = ::mkstemps(pattern.data(), static_cast<int>(std::strlen(suffix)));
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
  std::string read() const {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string path_;
  bool ok_ = false;
};

// What dot printed on stderr, as one line: lines joined with "; ", cut at 300 characters.
std::string foldLines(const std::string &text) {
  std::string out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (!line.empty()) out += (out.empty() ? "" : "; ") + line;
    begin = end + 1;
  }
  if (out.size() > 300) out = out.substr(0, 297) + "...";
  return out;
}

}  // namespace

Expected<std::string> renderSvg(const std::string &dot) {
  const std::string program = onPath("dot");
  if (program.empty())
    return makeError(
        "io", "svg needs Graphviz's 'dot' program, which is not on PATH (Debian: apt-get "
              "install graphviz; `make demo` installs it); --emit dot writes the DOT source");
  TempFile input(dot, ".dot"), output("", ".svg"), errors("", ".txt");
  if (!input.ok() || !output.ok() || !errors.ok())
    return makeError("io",
                     std::string("cannot write a temporary file for dot: ") + std::strerror(errno));
  std::vector<std::string> args = {program, "-Tsvg", input.path()};
  std::vector<char *> argv;
  for (std::string &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  ::posix_spawn_file_actions_init(&files);
  ::posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, output.path().c_str(),
                                     O_WRONLY | O_TRUNC, 0);
  ::posix_spawn_file_actions_addopen(&files, STDERR_FILENO, errors.path().c_str(),
                                     O_WRONLY | O_TRUNC, 0);
  pid_t pid = 0;
  const int e = ::posix_spawn(&pid, program.c_str(), &files, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&files);
  if (e != 0) return makeError("io", "cannot run " + program + ": " + std::strerror(e));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return makeError("io", std::string("waiting for dot: ") + std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string said = foldLines(errors.read());
    return makeError("io",
                     "svg: dot failed (" +
                         (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                            : std::string("killed by a signal")) +
                         ")" + (said.empty() ? "" : ": " + said));
  }
  return output.read();
}

}  // namespace ferry
