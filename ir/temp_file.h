// ir/temp_file.h — a fresh temporary file beside a target, for writes that land by rename().
#pragma once

#include <string>

namespace ferry {

/// Creates and opens for writing a new file beside `path`, named `path.tmp.PID.N` (the same file
/// system, so that rename() onto `path` is atomic); O_EXCL never takes over a file someone else
/// made. Returns its descriptor and sets `tmp` to its name, or returns -1 with errno set.
int createTempBeside(const std::string &path, std::string &tmp);

}  // namespace ferry
