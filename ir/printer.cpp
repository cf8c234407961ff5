// ir/printer.cpp — writes a graph as `.fy` text (printGraph, printModel), and saveModel: the text
// plus a folder of .npy files, written so that no file is lost or left naming a missing one.
#include "ir/printer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "ir/lexer.h"
#include "ir/literal.h"
#include "ir/npy.h"
#include "ir/temp_file.h"

namespace ferry {

namespace {

bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

std::string npyFileStem(std::string_view valueName) {
  std::string s;
  for (char c : valueName)
    s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '_';
  // A name of dots only would give a hidden or parent-folder file name.
  if (s.find_first_not_of('.') == std::string::npos) s = "_" + s;
  return s;
}

// Whether `p`'s data is in no file the text could name: a Data param above inlineLimit, or an
// Npy param the compiler converted (its file holds what the model declared, not its data).
bool needsFile(const ParamDecl &p, const PrintOptions &options) {
  if (p.init.kind == Initializer::Kind::Data) return p.data.numel() > options.inlineLimit;
  return p.init.kind == Initializer::Kind::Npy && p.foldedFrom.has_value();
}

// The file each param is printed as `npy(...)` with, indexed like graph.params(); empty for
// params printed otherwise. Without a params folder: an unchanged Npy param's own path. With
// one: "<folder>/<name>.npy" for every Npy param and every Data param above inlineLimit, names
// sanitised (npyFileStem) and made unique (".1.npy", ...) in param order, so that the text and
// saveModel always agree.
std::vector<std::string> npyPaths(const Graph &graph, const PrintOptions &options) {
  std::vector<std::string> paths(graph.params().size());
  std::set<std::string> taken;
  for (size_t i = 0; i < paths.size(); ++i) {
    const ParamDecl &p = graph.params()[i];
    if (options.paramsFolder.empty()) {
      if (p.init.kind == Initializer::Kind::Npy && !p.foldedFrom) paths[i] = p.init.path;
      continue;
    }
    if (p.init.kind != Initializer::Kind::Npy && !needsFile(p, options)) continue;
    const std::string stem = npyFileStem(graph.value(p.value).name);
    std::string name = stem + ".npy";
    for (int n = 1; taken.count(name); ++n) name = stem + "." + std::to_string(n) + ".npy";
    taken.insert(name);
    paths[i] = options.paramsFolder + "/" + name;
  }
  return paths;
}

class Printer {
 public:
  Printer(const Graph &graph, const PrintOptions &options)
      : g_(graph), options_(options), npyPaths_(npyPaths(graph, options)) {
    for (const OutputDecl &o : graph.outputs()) outputs_.push_back(o.value);
    std::sort(outputs_.begin(), outputs_.end());
  }

  std::string run() {
    const std::string &name = g_.name();
    out_ += "graph " + (isIdentifier(name) ? name : fy::quoteString(name)) + " {\n";
    for (const InputDecl &in : g_.inputs()) {
      line("input " + typed(in.value) + " @" + in.device.str(), in.loc);
    }
    for (size_t i = 0; i < g_.params().size(); ++i) {
      const ParamDecl &p = g_.params()[i];
      std::string s = "param " + typed(p.value) + device(p.pin, p.value) + " = " + init(p, i);
      line(s, p.loc);
    }
    for (NodeId id : g_.order())
      if (!inlined(g_.node(id).result)) node(g_.node(id));
    for (const OutputDecl &o : g_.outputs())
      line("output " + valueRef(g_, o.value) + device(o.pin, o.value), o.loc);
    flushLines();
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  // `inserted` marks a node the compiler made; it is printed with or without locations, since
  // it is part of what the graph says, not where it came from.
  // `group` (>= 0) marks a member of a fusion group (`fused 2`), also printed either way: the
  // nodes of one group run as one kernel.
  void line(std::string text, const Location &loc, bool inserted = false, int32_t group = -1) {
    std::string where;
    if (options_.locations && loc.known()) {
      // A file name with a line break would end the statement early; it prints as a space
      // (and so reads back as a plain comment).
      where = loc.str();
      for (char &c : where)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    }
    if (inserted) where = where.empty() ? "inserted" : "inserted " + where;
    if (group >= 0) {
      const std::string mark = "fused " + std::to_string(group);
      where = where.empty() ? mark : mark + " " + where;
    }
    lines_.push_back({std::move(text), std::move(where)});
  }

  // Writes the statements with their location comments aligned in one column, so the code
  // reads as a block and the origins as another; very long statements are not padded for.
  void flushLines() {
    constexpr size_t kMaxColumn = 72;
    size_t column = 0;
    for (const auto &[text, where] : lines_)
      if (!where.empty() && text.size() <= kMaxColumn) column = std::max(column, text.size());
    for (const auto &[text, where] : lines_) {
      out_ += "  " + text;
      if (!where.empty())
        out_ += std::string(column > text.size() ? column - text.size() : 0, ' ') + "  # " + where;
      out_ += "\n";
    }
    lines_.clear();
  }

  std::string typed(ValueId v) const { return valueRef(g_, v) + " : " + g_.value(v).type.str(); }

  // A pin wins over a placed device; either prints, so that a placed dump reads back pinned.
  std::string device(const std::optional<Device> &pin, ValueId v) const {
    if (pin) return " @" + pin->str();
    if (g_.value(v).device) return " @" + g_.value(v).device->str();
    return "";
  }

  std::string init(const ParamDecl &p, size_t index) const {
    switch (p.init.kind) {
      case Initializer::Kind::Zeros: return "zeros";
      case Initializer::Kind::Ones: return "ones";
      case Initializer::Kind::Randn: return "randn(seed=" + std::to_string(p.init.seed) + ")";
      case Initializer::Kind::Npy:
      case Initializer::Kind::Data: break;
    }
    if (!npyPaths_[index].empty()) return "npy(" + fy::quoteString(npyPaths_[index]) + ")";
    std::string s = "[";
    for (int64_t i = 0; i < p.data.numel(); ++i) {
      if (i) s += ", ";
      s += tensorElementStr(p.data, i);
    }
    return s + "]";
  }

  void node(const Node &n) {
    const OpInfo &op = n.info();
    std::string s = typed(n.result) + device(n.pinDevice, n.result);
    if (n.pinDType) s += " @" + std::string(dtypeName(*n.pinDType));
    s += " = " + std::string(op.name) + "(";
    bool first = true;
    for (ValueId o : n.operands) {
      s += (first ? "" : ", ") + (inlined(o) ? literalOf(g_, o).str() : valueRef(g_, o));
      first = false;
    }
    for (size_t i = 0; i < op.attrs.size() && i < n.attrs.size(); ++i) {
      const AttrSpec &spec = op.attrs[i];
      if (!spec.required && n.attrs[i] == spec.defaultValue) continue;
      s += (first ? "" : ", ") + spec.name + "=" + attrValueStr(n.attrs[i]);
      first = false;
    }
    line(s + ")", n.loc, n.inserted, n.group);
  }

  // A literal prints as its text at its reader (ir/literal.h), with no statement of its own; one
  // that is an output (which verify() rejects) prints as the constant it is.
  bool inlined(ValueId v) const {
    return isLiteral(g_, v) && !std::binary_search(outputs_.begin(), outputs_.end(), v);
  }

  const Graph &g_;
  const PrintOptions &options_;
  std::vector<ValueId> outputs_;  // sorted
  std::vector<std::string> npyPaths_;
  std::vector<std::pair<std::string, std::string>> lines_;  // statement, location ("" if none)
  std::string out_;
};

namespace fs = std::filesystem;

Status ioError(const std::string &path, const std::string &what) {
  return makeError("io", path + ": " + what);
}

// The options saveModel prints with: the params folder named after `path`.
PrintOptions savedOptions(const PrintOptions &options, const std::string &path) {
  PrintOptions o = options;
  o.paramsFolder = paramsFolderName(path);
  return o;
}

struct ParamFile {
  fs::path file;
  size_t param;  ///< index in graph.params()
};

// The param files saveModel writes for `graph` at `path`, in param order.
std::vector<ParamFile> paramFiles(const Graph &graph, const std::string &path,
                                  const PrintOptions &saved) {
  const fs::path dir = fs::path(path).parent_path();
  std::vector<std::string> paths = npyPaths(graph, saved);
  std::vector<ParamFile> files;
  for (size_t i = 0; i < paths.size(); ++i)
    if (!paths[i].empty()) files.push_back({dir / paths[i], i});
  return files;
}

// Writes `bytes` to `fd` and closes it: "" or what went wrong.
std::string writeAndClose(int fd, std::string_view bytes) {
  std::string error;
  for (size_t done = 0; done < bytes.size() && error.empty();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0)
      done += static_cast<size_t>(n);
    else if (n == 0)
      error = "nothing written";
    else if (errno != EINTR)
      error = std::strerror(errno);
  }
  if (::close(fd) != 0 && error.empty()) error = std::strerror(errno);
  return error;
}

std::string cannotOpen(int err) {
  return std::string("cannot open file for writing: ") + std::strerror(err);
}

// Writes `bytes` to the new file `path`, never replacing one; removes it again if writing fails.
Status writeNewFile(const std::string &path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return ioError(path,
                   errno == EEXIST ? "exists already; refusing to replace it" : cannotOpen(errno));
  if (std::string error = writeAndClose(fd, bytes); !error.empty()) {
    ::unlink(path.c_str());
    return ioError(path, "write error: " + error);
  }
  return {};
}

// Writes the model's text to `path`: to a temporary file beside it, renamed over it, so that a
// failure leaves the file as it was. An existing file that is not a regular one (a link, a
// device, a pipe) is written in place: a rename would replace it rather than write to it.
Status replaceFile(const std::string &path, std::string_view bytes) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return ioError(path, "cannot write: is a directory");
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return ioError(path, cannotOpen(errno));
    if (std::string error = writeAndClose(fd, bytes); !error.empty())
      return ioError(path, "write error: " + error);
    return {};
  }
  std::string tmp;
  const int fd = createTempBeside(path, tmp);
  if (fd < 0) return ioError(path, cannotOpen(errno));
  std::string error = writeAndClose(fd, bytes);
  if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0)
    error = std::string("cannot rename '") + tmp + "' to it: " + std::strerror(errno);
  if (error.empty()) return {};
  ::unlink(tmp.c_str());
  return ioError(path, "write error: " + error);
}

// What a saveModel call made, removed again when it fails.
struct Made {
  std::vector<fs::path> files;
  fs::path folder;  ///< empty when the params folder was there already

  Status undo(Status why) const {
    std::error_code ignored;
    for (auto it = files.rbegin(); it != files.rend(); ++it) fs::remove(*it, ignored);
    if (!folder.empty()) fs::remove(folder, ignored);  // only if empty: nothing of others'
    return why;
  }
};

}  // namespace

std::string printGraph(const Graph &graph, const PrintOptions &options) {
  return Printer(graph, options).run();
}

Expected<std::string> printModel(const Graph &graph, const PrintOptions &options) {
  DiagnosticEngine diags;
  if (options.paramsFolder.empty())
    for (const ParamDecl &p : graph.params()) {
      if (!needsFile(p, options) || p.data.numel() <= options.maxInline) continue;
      const std::string converted =
          p.foldedFrom
              ? " (converted from " + std::string(dtypeName(*p.foldedFrom)) + " at compile time)"
              : "";
      diags.error("limit", p.loc,
                  "param " + valueRef(graph, p.value) + " : " + graph.value(p.value).type.str() +
                      " (" + std::to_string(p.data.numel()) + " elements) is in no file" +
                      converted + " and too large to print inline (more than " +
                      std::to_string(options.maxInline) + " elements)");
    }
  if (diags.hasErrors()) return Status(diags.take());
  return printGraph(graph, options);
}

std::string valueRef(const Graph &graph, ValueId v) {
  return fy::valueRefText(graph.value(v).name);
}
std::string valueRef(std::string_view name) { return fy::valueRefText(name); }

std::string paramsFolderName(const std::string &path) {
  std::string name = fs::path(path).filename().string();
  if (name.size() > 3 && name.ends_with(".fy")) name.resize(name.size() - 3);
  return name + ".params";
}

Status checkSaveModel(const Graph &graph, const std::string &path, const PrintOptions &options) {
  const PrintOptions saved = savedOptions(options, path);
  const std::vector<ParamFile> files = paramFiles(graph, path, saved);
  if (files.empty()) return {};
  const fs::path folder = fs::path(path).parent_path() / saved.paramsFolder;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(folder, ec)) && !fs::is_directory(folder, ec))
    return ioError(folder.string(), "is there and is not a folder: the model's params would go "
                                    "into it; remove it or write the model elsewhere");
  std::vector<std::string> there;
  for (const ParamFile &f : files)
    if (fs::exists(fs::symlink_status(f.file, ec))) there.push_back(f.file.string());
  if (there.empty()) return {};
  const std::string more =
      there.size() > 1 ? " (and " + std::to_string(there.size() - 1) + " more)" : "";
  return makeError("io", there.front() + " exists" + more +
                             "; a model's params are written into a folder of its own, never "
                             "over a file that is there: remove " +
                             folder.string() + " or write the model elsewhere");
}

Status saveModel(const Graph &graph, const std::string &path, const PrintOptions &options,
                 std::string_view trailer) {
  FERRY_TRY(checkSaveModel(graph, path, options));
  const PrintOptions saved = savedOptions(options, path);
  const std::vector<ParamFile> files = paramFiles(graph, path, saved);
  Made made;
  if (!files.empty()) {
    const fs::path folder = fs::path(path).parent_path() / saved.paramsFolder;
    std::error_code ec;
    if (fs::create_directory(folder, ec)) made.folder = folder;
    if (ec) return ioError(folder.string(), "cannot create folder: " + ec.message());
    for (const ParamFile &f : files) {
      const std::string file = f.file.string();
      Status s = writeNewFile(file, serializeNpy(graph.params()[f.param].data));
      if (!s.ok()) return made.undo(std::move(s));
      made.files.push_back(f.file);
    }
  }
  // Last, once every file it names is there.
  std::string text = printGraph(graph, saved);
  text += trailer;
  if (Status s = replaceFile(path, text); !s.ok()) return made.undo(std::move(s));
  return {};
}

}  // namespace ferry
