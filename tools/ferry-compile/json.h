// tools/ferry-compile/json.h — a compile as JSON (ferry-compile --emit json): the placement
// manifest, format "ferry.graph" version 4, whose schema is docs/manifest.md.
#pragma once

#include <map>
#include <string>

#include "passes/compile.h"
#include "tools/ferry-compile/device_totals.h"
#include "tools/ferry-compile/emit.h"

namespace ferry {

/// The "version" emitManifest writes. docs/manifest.md lists what each version changed: 2 added
/// fields to version 1; 3 added `outcome` and `statistics.devices`, and made `statistics` null for
/// a rejected compile (version 2 wrote zeros there); 4 counts transfers and casts of weights apart,
/// as done once at load (`at_load`, `statistics.load_*`), not per run.
inline constexpr int kManifestVersion = 5;

/// The placement manifest of a compile as one JSON document, laid out as docs/manifest.md
/// specifies: the options that decide placement; the graph's inputs, params, nodes (in
/// topological order) and outputs, each value with its device and dtype and the reason for each
/// (structured and as one line of text); every transfer and cast with its bytes, per run or once at
/// load; the
/// statistics (no pass timings; per device: `totals`, from deviceTotals(), read only for an
/// accepted compile) and the compile's diagnostics. Deterministic: the same model text, model
/// path (locations quote it as given), options and ferry build give the same bytes. With
/// `emit.locations` off no location appears, neither in "location" fields (null) nor in texts.
/// Any result can be written, a rejected or stopped one too (`outcome` says which): values not
/// placed yet have a null device and reasons of kind "none"; a rejected one has null statistics.
std::string emitManifest(const CompileResult &result, const CompileOptions &options,
                         const std::map<Device, DeviceTotals> &totals,
                         const EmitOptions &emit = {});

/// The same manifest for a caller that has no totals yet: lowers the graph once (a whole,
/// accepted compile only) for the workspaces, then computes the totals. ferry-compile passes
/// the totals it computed for all its outputs instead.
std::string emitManifest(const CompileResult &result, const CompileOptions &options,
                         const EmitOptions &emit = {});

/// The graph alone in the layout of version 1 ({"format": "ferry.graph", "version": 1, "graph",
/// "inputs", "params", "nodes", "outputs"}): what `--emit json` wrote before the manifest, kept
/// for callers that have only a Graph. Every field it writes is in the manifest, with the same
/// name and meaning.
std::string emitJson(const Graph &graph, const EmitOptions &options = {});

}  // namespace ferry
