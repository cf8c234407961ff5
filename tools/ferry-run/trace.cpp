// tools/ferry-run/trace.cpp — the Trace Event Format JSON of one run: metadata events naming
// the process and its lanes, then complete ("X") events in the order they happened: the input
// copy when it moved inputs, then every step.
#include "tools/ferry-run/trace.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/json.h"
#include "ir/status.h"

namespace ferry {

namespace {

constexpr int kPid = 1;
constexpr int kProcessTid = 0;  // process metadata belongs to no lane

// An event's args: keys and values already rendered as JSON.
using Args = std::vector<std::pair<std::string_view, std::string>>;

// Microseconds, the format's unit; the fraction is kept because small steps take less than one.
std::string micros(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e6);
  return buf;
}

std::string object(const Args &args) {
  std::string s = "{";
  for (const auto &[key, value] : args)
    s += (s.size() > 1 ? ", " : "") + jsonString(key) + ": " + value;
  return s + "}";
}

// One lane per device, in the executable's (sorted) order, then the transfers lane.
class Lanes {
 public:
  explicit Lanes(const std::vector<Device> &devices) : devices_(devices) {}
  int of(Device d) const {
    auto it = std::find(devices_.begin(), devices_.end(), d);
    FERRY_CHECK(it != devices_.end()) << "a step runs on " << d.str() << ", not a device of the "
                                      << "executable";
    return static_cast<int>(it - devices_.begin()) + 1;
  }
  int transfers() const { return static_cast<int>(devices_.size()) + 1; }

 private:
  const std::vector<Device> &devices_;
};

// {"ph": "M", ...}: names the process or a lane, or orders the lanes. The format needs no "ts"
// here, but some readers expect every event to have one; Chrome writes 0 too.
std::string metadata(std::string_view name, int tid, Args args) {
  return object({{"ph", jsonString("M")},
                 {"pid", std::to_string(kPid)},
                 {"tid", std::to_string(tid)},
                 {"ts", "0"},
                 {"name", jsonString(name)},
                 {"args", object(args)}});
}

// {"ph": "X", ...}: something that ran on lane `tid` from `start` for `seconds`.
std::string complete(const std::string &name, std::string_view category, int tid, double start,
                     double seconds, const Args &args) {
  return object({{"ph", jsonString("X")},
                 {"pid", std::to_string(kPid)},
                 {"tid", std::to_string(tid)},
                 {"name", jsonString(name)},
                 {"cat", jsonString(category)},
                 {"ts", micros(start)},
                 {"dur", micros(seconds)},
                 {"args", object(args)}});
}

std::vector<std::string> laneMetadata(const Executable &exe, const Lanes &lanes,
                                      const std::string &model) {
  std::vector<std::string> events = {
      metadata("process_name", kProcessTid, {{"name", jsonString(model)}})};
  auto lane = [&](int tid, const std::string &name) {
    events.push_back(metadata("thread_name", tid, {{"name", jsonString(name)}}));
    // Without it a viewer may order lanes by name or first event, not devices then transfers.
    events.push_back(metadata("thread_sort_index", tid, {{"sort_index", std::to_string(tid)}}));
  };
  for (Device d : exe.devices) lane(lanes.of(d), d.str());
  lane(lanes.transfers(), "transfers");
  return events;
}

// The session copies every input in at once and times the copy as a whole, so the event spans
// all inputs; it is only drawn when some of them came from another device.
std::string inputCopyEvent(const Executable &exe, const RunStats &stats, const Lanes &lanes) {
  const std::string name = "copy inputs (" + std::to_string(stats.inputMoves) + " moved)";
  return complete(name, "input", lanes.transfers(), stats.inputCopyStart, stats.inputCopySeconds,
                  {{"inputs", std::to_string(exe.inputs.size())},
                   {"moved", std::to_string(stats.inputMoves)},
                   {"moved bytes", std::to_string(stats.inputMoveBytes)}});
}

std::string stepEvent(const Executable &exe, const RunStats &stats, const Lanes &lanes, size_t i) {
  const Step &step = exe.steps[i];
  const Slot &result = exe.slots[static_cast<size_t>(step.result)];
  const std::string op = stepOpName(step);
  const bool transfer = step.op == OpKind::Transfer;
  Args args = {{"step", std::to_string(i)},
               {"op", jsonString(op)},
               {"result", jsonString("%" + result.name)},
               {"type", jsonString(result.type.str())},
               {"device", jsonString(result.device.str())},
               {"bytes", std::to_string(result.type.byteSize())},
               {"location", jsonString(step.loc.str())}};
  if (transfer) {
    const Slot &from = exe.slots[static_cast<size_t>(step.operands[0])];
    args.emplace_back("from", jsonString(from.device.str()));
  }
  if (step.inserted) args.emplace_back("inserted", "true");
  return complete(op + " %" + result.name, transfer ? "transfer" : "step",
                  transfer ? lanes.transfers() : lanes.of(result.device), stats.stepStarts[i],
                  stats.stepSeconds[i], args);
}

}  // namespace

std::string renderTrace(const Executable &exe, const RunStats &stats, const std::string &model) {
  FERRY_CHECK(stats.stepStarts.size() == exe.steps.size() &&
              stats.stepSeconds.size() == exe.steps.size())
      << "the run stats time " << stats.stepStarts.size() << " steps, the executable has "
      << exe.steps.size();
  const Lanes lanes(exe.devices);
  std::vector<std::string> events = laneMetadata(exe, lanes, model);
  if (stats.inputMoves > 0) events.push_back(inputCopyEvent(exe, stats, lanes));
  for (size_t i = 0; i < exe.steps.size(); ++i) events.push_back(stepEvent(exe, stats, lanes, i));

  // One event per line, so that the file reads and greps well outside a viewer too.
  std::string out = "{\"displayTimeUnit\": \"ms\",\n \"otherData\": " +
                    object({{"model", jsonString(model)},
                            {"steps", std::to_string(exe.steps.size())},
                            {"run us", micros(stats.seconds)},
                            {"transfers", std::to_string(stats.transfers)},
                            {"transfer bytes", std::to_string(stats.transferBytes)},
                            {"input moves", std::to_string(stats.inputMoves)}}) +
                    ",\n \"traceEvents\": [";
  for (size_t i = 0; i < events.size(); ++i) out += (i > 0 ? ",\n  " : "\n  ") + events[i];
  return out + "\n]}\n";
}

}  // namespace ferry
