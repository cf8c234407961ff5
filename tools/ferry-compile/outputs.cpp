// tools/ferry-compile/outputs.cpp — planning and checking ferry-compile's outputs, and writing
// them.
#include "tools/ferry-compile/outputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace ferry {

namespace {

namespace fs = std::filesystem;

std::string_view extension(const std::string &format) {
  return format == "text"   ? ".fy"
         : format == "dot"  ? ".dot"
         : format == "json" ? ".json"
         : format == "cuda" ? ".cu"
                            : ".svg";
}

std::string_view documentName(const std::string &format) {
  return format == "text"   ? "the text dump"
         : format == "dot"  ? "the DOT graph"
         : format == "svg"  ? "the SVG picture"
         : format == "json" ? "the manifest"
         : format == "cuda" ? "the CUDA kernels"
                            : "the executable";
}

Status usageError(std::string message) { return makeError("usage", std::move(message)); }

Status cannotWrite(const std::string &path, int err) {
  return makeError("io", "cannot write '" + path + "': " + std::strerror(err));
}

// Whether the file `path` can be written, without changing it: an existing file is opened for
// writing (not truncated); a new one is created and removed. Special files (/dev/null, a
// terminal, a pipe) are not opened: a pipe would block until read.
Status checkWritable(const std::string &path, const struct stat &model, const Destination &d) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (st.st_dev == model.st_dev && st.st_ino == model.st_ino) {
      const std::string what = std::string(documentName(d.format));
      return usageError(d.flag == "--emit-dir"
                            ? "--emit-dir: " + what + " would go to '" + path +
                                  "', which is the model file itself; refusing to overwrite it "
                                  "(choose another --emit-dir)"
                            : d.flag + " " + path +
                                  ": this is the model file itself; refusing "
                                  "to overwrite it with " +
                                  what);
    }
    if (S_ISDIR(st.st_mode)) return cannotWrite(path, EISDIR);
    if (!S_ISREG(st.st_mode)) return {};
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return cannotWrite(path, errno);
    ::close(fd);
    return {};
  }
  if (errno != ENOENT) return cannotWrite(path, errno);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return cannotWrite(path, errno);
  ::close(fd);
  ::unlink(path.c_str());
  return {};
}

// Whether the folder `dir`, which does not exist, can be created: its nearest existing ancestor is
// a folder where a file can be made (a temporary one is created and removed).
Status checkCreatable(const std::string &dir) {
  auto failure = [&](int err) {
    return makeError("io", "cannot create '" + dir + "': " + std::strerror(err));
  };
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  while (!fs::exists(fs::symlink_status(p, ec)) && p.has_parent_path() && p.parent_path() != p)
    p = p.parent_path();
  if (!fs::is_directory(p, ec)) return failure(ENOTDIR);
  std::string probe = (p / ".ferry-compile-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return failure(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

}  // namespace

bool isArtifactPath(const std::string &path) { return path.ends_with(".ferry"); }

Expected<OutputPlan> planOutputs(const OutputRequest &r) {
  std::vector<std::string> formats;
  const std::vector<std::string> emits =
      r.emits.empty() ? std::vector<std::string>{"text"} : r.emits;
  const bool none = std::find(emits.begin(), emits.end(), "none") != emits.end();
  for (const std::string &f : emits)
    if (f != "none" && std::find(formats.begin(), formats.end(), f) == formats.end())
      formats.push_back(f);
  if (none && !formats.empty())
    return usageError("--emit: none writes nothing, and cannot go with " + formats.front());
  OutputPlan plan;
  plan.artifact = isArtifactPath(r.output) ? r.output : "";
  const std::string file = !plan.artifact.empty() || r.output == "-" ? "" : r.output;
  if (!r.emitDir.empty() && !file.empty())
    return usageError("-o: give -o FILE or --emit-dir DIR, not both (-o MODEL.ferry can go with "
                      "--emit-dir)");
  if (none && !file.empty())
    return usageError("-o " + file +
                      ": --emit none writes nothing there (--emit none -o MODEL.ferry writes "
                      "only the executable)");
  if (none && !r.emitDir.empty())
    return usageError("--emit-dir " + r.emitDir + ": --emit none writes nothing there");
  if (r.emitDir.empty() && formats.size() > 1)
    return usageError("--emit: several formats (" + std::to_string(formats.size()) +
                      ") need --emit-dir DIR, where each is written as MODEL.EXT");
  if (!plan.artifact.empty() && !r.stopAfter.empty())
    return usageError("-o " + plan.artifact +
                      " writes an executable, which needs the whole pipeline; --stop-after " +
                      r.stopAfter + " stops before it");
  plan.emitDir = r.emitDir;
  const std::string stem = fs::path(r.model).stem().string();
  for (const std::string &f : formats) {
    if (!r.emitDir.empty())
      plan.documents.push_back(
          {f, (fs::path(r.emitDir) / (stem + std::string(extension(f)))).string(), "--emit-dir"});
    else
      plan.documents.push_back({f, file, file.empty() ? "" : "-o"});
  }
  return plan;
}

Status checkDestinations(const OutputPlan &plan, const std::string &model) {
  struct stat modelStat {};
  if (::stat(model.c_str(), &modelStat) != 0)
    return makeError("io", "cannot read '" + model + "': " + std::strerror(errno));
  std::error_code ec;
  const bool dirExists = !plan.emitDir.empty() && fs::is_directory(plan.emitDir, ec);
  if (!plan.emitDir.empty() && !dirExists) FERRY_TRY(checkCreatable(plan.emitDir));
  for (const Destination &d : plan.documents) {
    // Files in a folder still to be made are new: nothing there to overwrite, and the folder's
    // check stands for theirs.
    if (d.path.empty() || (d.flag == "--emit-dir" && !dirExists)) continue;
    FERRY_TRY(checkWritable(d.path, modelStat, d));
  }
  if (!plan.artifact.empty())
    FERRY_TRY(
        checkWritable(plan.artifact, modelStat, Destination{"executable", plan.artifact, "-o"}));
  return {};
}

Status checkNotRead(const OutputPlan &plan, const Graph &graph, const std::string &model) {
  std::vector<Destination> files;
  for (const Destination &d : plan.documents)
    if (!d.path.empty()) files.push_back(d);
  if (!plan.artifact.empty()) files.push_back({"executable", plan.artifact, "-o"});
  const fs::path dir = fs::path(model).parent_path();
  for (const ParamDecl &p : graph.params()) {
    if (p.init.kind != Initializer::Kind::Npy) continue;
    for (const Destination &d : files) {
      std::error_code ec;
      if (!fs::equivalent(dir / p.init.path, d.path, ec)) continue;
      const std::string what =
          "param %" + graph.value(p.value).name + "'s data, '" + p.init.path + "'";
      return usageError(d.flag == "--emit-dir"
                            ? "--emit-dir: " + std::string(documentName(d.format)) +
                                  " would go to '" + d.path + "', which the model reads (" + what +
                                  "); refusing to overwrite it (choose another --emit-dir)"
                            : d.flag + " " + d.path + ": the model reads this file (" + what +
                                  "); refusing to overwrite it with " +
                                  std::string(documentName(d.format)));
    }
  }
  return {};
}

Status makeEmitDir(const OutputPlan &plan) {
  if (plan.emitDir.empty()) return {};
  std::error_code ec;
  fs::create_directories(plan.emitDir, ec);
  if (ec) return makeError("io", "cannot create '" + plan.emitDir + "': " + ec.message());
  return {};
}

Status writeBytes(const std::string &path, std::string_view bytes) {
  if (path.empty()) {
    std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::cout.flush();
    if (!std::cout) return makeError("io", "cannot write to standard output");
    return {};
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (out) out.flush();
  if (!out) return makeError("io", "cannot write '" + path + "': " + std::strerror(errno));
  return {};
}

}  // namespace ferry
