#!/usr/bin/env python3
"""scripts/onnx_conformance.py — runs ONNX's backend node test cases through ferry-run.

The helper of scripts/onnx-conformance.sh (which finds the venv and the ferry build); run it with
the venv's python. Steps, in order:

  1. cases     the node cases of the onnx package: its `onnx/backend/test/data/node` folder when
               the wheel ships one, else generated once from the package's own case definitions
               (`onnx.backend.test.case.node`) into a cache folder, in the same layout (model.onnx,
               test_data_set_K/input_J.pb, output_J.pb).
  2. select    a case belongs to op X when X is its main op: the type of its one node (a case of
               the default domain made by ONNX's `expect`); a function-body case
               (`<case>_expanded`, `<case>_expanded_verN`: the op's function expanded into the
               ops it is defined by) belongs to the op of `<case>` and is counted apart. Only
               cases whose main op is in the imported ops' list (or --ops) are kept.
  3. run       `ferry-run model.onnx --check-dir test_data_set_K` on every data set: passed (exit 0
               on all), unsupported (an import error that says so: exit 2 and "unsupported" in
               its diagnostics), failed (a mismatch, a run or import error of another kind, a
               crash or a timeout). With --ort, ONNX Runtime runs the same cases and compares as
               ONNX's backend test runner does (same rtol/atol).
  4. report    a markdown table per op (and the function-body table) with every case that did not
               pass and why, written to --out; a summary on stdout.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

# The ops the importer converts (docs/onnx.md), in the order of its docs.
ISSUE_OPS = (
    "Add Sub Mul Div Pow Neg Abs Exp Log Sqrt Reciprocal Relu LeakyRelu Sigmoid Tanh Erf Gelu Clip "
    "MatMul Gemm Conv MaxPool AveragePool GlobalAveragePool BatchNormalization Softmax LogSoftmax "
    "LayerNormalization ReduceMean ReduceSum ReduceMax Cast Transpose Reshape Flatten Concat Slice "
    "Gather Unsqueeze Squeeze Expand Where Equal Less Greater Identity Dropout Constant Shape "
    "ConstantOfShape Range"
).split()

# ONNX's backend test runner compares node cases with these (TestCase.rtol/atol of `expect`).
NODE_RTOL = 1e-3
NODE_ATOL = 1e-7

EXPANDED = re.compile(r"^(?P<base>.*)_expanded(_ver\d+)?$")


@dataclass
class Case:
    name: str
    path: Path
    op: str             # its main op
    expanded: bool      # a function-body case
    data_sets: list[Path]
    opset: int


@dataclass
class Result:
    status: str         # passed | failed | unsupported
    reason: str = ""    # why not passed: the first line that says so
    kind: str = ""      # why not passed, in a word: opset, dtype, op, wrong result... (KINDS)


@dataclass
class OpRow:
    cases: list[str] = field(default_factory=list)
    ferry: dict[str, int] = field(default_factory=lambda: {"passed": 0, "failed": 0,
                                                           "unsupported": 0})
    ort: dict[str, int] = field(default_factory=lambda: {"passed": 0, "failed": 0,
                                                         "unsupported": 0})


# --- 1. cases --------------------------------------------------------------------------------

def shipped_node_dir() -> Path | None:
    d = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    return d if d.is_dir() and any(d.glob("test_*/model.onnx")) else None


def write_value(path: Path, value, vi: onnx.ValueInfoProto) -> None:
    if isinstance(value, onnx.TensorProto):
        proto = value
    elif vi.type.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, vi.name)
    elif vi.type.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, vi.name)
    elif vi.type.HasField("map_type"):
        proto = numpy_helper.from_dict(value, vi.name)
    else:
        proto = numpy_helper.from_array(np.asarray(value), vi.name)
    path.write_bytes(proto.SerializeToString())


def generate_node_cases(dest: Path, ops: set[str]) -> None:
    """Writes the node cases whose main op is in `ops` (and their function bodies) under `dest`."""
    import warnings

    import onnx.backend.test.case.node as node_cases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case definitions divide by zero on purpose
        cases = node_cases.collect_testcases()
    single = {c.name: c.model.graph.node[0].op_type for c in cases if len(c.model.graph.node) == 1}
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    written = 0
    for c in cases:
        m = EXPANDED.match(c.name)
        op = single.get(m.group("base")) if m else single.get(c.name)
        if op not in ops:
            continue
        d = tmp / c.name
        d.mkdir(parents=True)
        (d / "model.onnx").write_bytes(c.model.SerializeToString())
        for k, (inputs, outputs) in enumerate(c.data_sets):
            ds = d / f"test_data_set_{k}"
            ds.mkdir()
            for j, value in enumerate(inputs):
                write_value(ds / f"input_{j}.pb", value, c.model.graph.input[j])
            for j, value in enumerate(outputs):
                write_value(ds / f"output_{j}.pb", value, c.model.graph.output[j])
        written += 1
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    print(f"onnx-conformance: generated {written} node cases of onnx {onnx.__version__} in {dest}")


def node_case_dir(cache: Path) -> Path:
    """The folder of node cases: the wheel's, or the cache (generated when missing or stale)."""
    shipped = shipped_node_dir()
    if shipped:
        return shipped
    dest = cache / f"onnx-{onnx.__version__}"
    stamp = dest / "STAMP"
    want = " ".join(sorted(ISSUE_OPS))
    if not (stamp.is_file() and stamp.read_text() == want):
        cache.mkdir(parents=True, exist_ok=True)
        generate_node_cases(dest, set(ISSUE_OPS))
        stamp.write_text(want)
    return dest


def main_op(model: onnx.ModelProto) -> str | None:
    g = model.graph
    if len(g.node) == 1 and g.node[0].domain in ("", "ai.onnx"):
        return g.node[0].op_type
    return None


def default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def load_cases(root: Path, ops: list[str]) -> list[Case]:
    """The cases under `root` whose main op is in `ops`, sorted by op (in `ops` order), name."""
    models = {d.name: d for d in root.iterdir() if (d / "model.onnx").is_file()}
    protos = {name: onnx.load(str(d / "model.onnx"), load_external_data=False)
              for name, d in models.items()}
    single = {name: main_op(p) for name, p in protos.items()}
    order = {op: i for i, op in enumerate(ops)}
    cases = []
    for name, d in models.items():
        m = EXPANDED.match(name)
        op = single.get(m.group("base")) if m else single[name]
        if op not in order:
            continue
        data_sets = sorted(d.glob("test_data_set_*"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
        cases.append(Case(name, d, op, bool(m), data_sets, default_opset(protos[name])))
    cases.sort(key=lambda c: (order[c.op], c.name))
    return cases


def copy_subset(root: Path, dest: Path) -> int:
    """Replaces the case folders of `dest` with the cases its CASES file lists (model.onnx and
    test_data_set_0 of each), copied from `root`."""
    listed = [l.split("#")[0].strip() for l in (dest / "CASES").read_text().splitlines()]
    listed = [l for l in listed if l]
    missing = [c for c in listed if not (root / c / "model.onnx").is_file()]
    if missing:
        print(f"onnx-conformance: {dest / 'CASES'}: no such case in {root}: {', '.join(missing)}",
              file=sys.stderr)
        return 2
    for old in dest.glob("test_*"):
        shutil.rmtree(old)
    size = 0
    for c in listed:
        (dest / c).mkdir()
        shutil.copy2(root / c / "model.onnx", dest / c / "model.onnx")
        shutil.copytree(root / c / "test_data_set_0", dest / c / "test_data_set_0")
        size += sum(f.stat().st_size for f in (dest / c).rglob("*") if f.is_file())
    print(f"onnx-conformance: copied {len(listed)} cases of onnx {onnx.__version__} into {dest} "
          f"({size / 1024:.0f} KiB)")
    return 0


# --- 3. run ----------------------------------------------------------------------------------

# Why a case did not pass, from what ferry-run printed: (kind, pattern), the first that matches.
# The first four are "unsupported": ferry declines the case (an import error that says so, or a
# dtype of the test data ferry has no type for); the rest "failed".
KINDS = (
    ("opset", re.compile(r"newer than ferry knows|opsets? \d+ to \d+", re.IGNORECASE)),
    ("dtype", re.compile(r"data type \w+, which ferry does not support|dtype .*not supported",
                         re.IGNORECASE)),
    ("op", re.compile(r"ops? (is|are) not supported")),
    ("unsupported", re.compile(r"\[unsupported\]|not supported|unsupported|does not support",
                               re.IGNORECASE)),
    ("wrong result", re.compile(r"^check +FAIL", re.MULTILINE)),
)
UNSUPPORTED_KINDS = {"opset", "dtype", "op", "unsupported"}


def first_line(text: str, pattern: re.Pattern | None = None) -> str:
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if pattern:
        hits = [l for l in lines if pattern.search(l)]
        if hits:
            return hits[0]
    errors = [l for l in lines if "error" in l.lower()]
    return (errors or lines or [""])[0]


def classify(output: str) -> Result:
    for kind, pattern in KINDS:
        if pattern.search(output):
            if kind == "wrong result":
                bad = [l.strip() for l in output.splitlines()
                       if l.startswith("check ") and "pass" not in l.rsplit(":", 1)[-1]]
                return Result("failed", "; ".join(bad[:2]), kind)
            status = "unsupported" if kind in UNSUPPORTED_KINDS else "failed"
            return Result(status, first_line(output, pattern), kind)
    return Result("failed", first_line(output), "error")


def run_ferry(ferry_run: Path, case: Case, timeout: float) -> Result:
    if not case.data_sets:
        return Result("failed", "the case has no test_data_set_*", "error")
    for ds in case.data_sets:
        cmd = [str(ferry_run), "model.onnx", "--check-dir", ds.name, "--iterations", "1",
               "--warmup", "0"]
        try:
            # Run in the case's folder, so that messages name its files short.
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               timeout=timeout, cwd=case.path)
        except subprocess.TimeoutExpired:
            return Result("failed", f"{ds.name}: timed out after {timeout:g} s", "timeout")
        if p.returncode == 0:
            continue
        if p.returncode < 0:
            return Result("failed", f"{ds.name}: signal {-p.returncode}: {first_line(p.stderr)}",
                          "crash")
        r = classify(p.stderr + "\n" + p.stdout)
        if len(case.data_sets) > 1:
            r.reason = f"{ds.name}: {r.reason}"
        return r
    return Result("passed")


def read_pb(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


# ORT's Python binding cannot pass these dtypes (f8, int4, int2, f4) in or out.
BINDING_LACKS_DTYPE = re.compile(r"Numpy_type \d+ can't be converted|No corresponding Numpy type")


def exotic(dtype: np.dtype) -> bool:
    """A dtype of the ml_dtypes package (bfloat16, float8s, int4...), not numpy's own."""
    return dtype.type.__module__.startswith("ml_dtypes")


def run_ort(case: Case) -> Result:
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 4  # a failed case is reported in the table, not logged
        sess = ort.InferenceSession(str(case.path / "model.onnx"), options,
                                    providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT rejects what it cannot load or has no kernel for
        return Result("unsupported", first_line(str(e)))
    names = [i.name for i in sess.get_inputs()]
    for ds in case.data_sets:
        try:
            inputs = [read_pb(p) for p in sorted(ds.glob("input_*.pb"),
                                                 key=lambda p: int(p.stem.split("_")[1]))]
            expected = [read_pb(p) for p in sorted(ds.glob("output_*.pb"),
                                                   key=lambda p: int(p.stem.split("_")[1]))]
        except Exception as e:  # sequences, optionals: not plain tensors
            return Result("unsupported", f"{ds.name}: {first_line(str(e))}")
        try:
            got = sess.run(None, dict(zip(names, inputs)))
            if len(got) != len(expected):
                raise AssertionError(f"{len(got)} outputs, expected {len(expected)}")
            for g, e in zip(got, expected):
                g = np.asarray(g)
                if exotic(e.dtype) and g.dtype.itemsize == e.dtype.itemsize:
                    g = g.view(e.dtype)  # ORT's Python binding returns f8 as raw bytes
                if g.shape != e.shape or g.dtype != e.dtype:
                    raise AssertionError(f"got {g.dtype}{list(g.shape)}, "
                                         f"expected {e.dtype}{list(e.shape)}")
                if exotic(e.dtype):
                    np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64),
                                               rtol=NODE_RTOL, atol=NODE_ATOL)
                elif e.dtype == object or not np.issubdtype(e.dtype, np.inexact):
                    np.testing.assert_array_equal(g, e)
                else:
                    np.testing.assert_allclose(g, e, rtol=NODE_RTOL, atol=NODE_ATOL)
        except Exception as e:
            if BINDING_LACKS_DTYPE.search(str(e)):
                return Result("unsupported", f"{ds.name}: {first_line(str(e))}")
            return Result("failed", f"{ds.name}: {first_line(str(e))}")
    return Result("passed")


# --- 4. report -------------------------------------------------------------------------------

def pct(n: int, total: int) -> str:
    return f"{100.0 * n / total:.1f} %" if total else "-"


def table(title: str, cases: list[Case], ferry: dict, ort: dict | None, ops: list[str]) -> list[str]:
    rows: dict[str, OpRow] = {}
    for c in cases:
        row = rows.setdefault(c.op, OpRow())
        row.cases.append(c.name)
        row.ferry[ferry[c.name].status] += 1
        if ort is not None:
            row.ort[ort[c.name].status] += 1
    head = "| op | cases | passed | failed | unsupported | pass rate |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if ort is not None:
        head += " ORT passed | ORT failed | ORT unsupported |"
        rule += "---:|---:|---:|"
    lines = [f"### {title}", "", head, rule]
    total = OpRow()
    for op in ops:
        if op not in rows:
            continue
        r = rows[op]
        n = len(r.cases)
        line = (f"| {op} | {n} | {r.ferry['passed']} | {r.ferry['failed']} | "
                f"{r.ferry['unsupported']} | {pct(r.ferry['passed'], n)} |")
        if ort is not None:
            line += f" {r.ort['passed']} | {r.ort['failed']} | {r.ort['unsupported']} |"
        lines.append(line)
        total.cases += r.cases
        for k in total.ferry:
            total.ferry[k] += r.ferry[k]
            total.ort[k] += r.ort[k]
    n = len(total.cases)
    line = (f"| **total** | **{n}** | **{total.ferry['passed']}** | **{total.ferry['failed']}** | "
            f"**{total.ferry['unsupported']}** | **{pct(total.ferry['passed'], n)}** |")
    if ort is not None:
        line += (f" **{total.ort['passed']}** | **{total.ort['failed']}** | "
                 f"**{total.ort['unsupported']}** |")
    lines.append(line)
    missing = [op for op in ops if op not in rows]
    if missing:
        lines += ["", "No cases: " + ", ".join(missing) + "."]
    return lines


def reasons(cases: list[Case], ferry: dict) -> list[str]:
    """How many cases did not pass for each kind of reason."""
    counts: dict[tuple[str, str], int] = {}
    for c in cases:
        r = ferry[c.name]
        if r.status != "passed":
            key = (r.status, r.kind)
            counts[key] = counts.get(key, 0) + 1
    lines = ["### Why cases did not pass", "", "| ferry | why | node cases | function bodies |",
             "|---|---|---:|---:|"]
    for (status, kind), _ in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1])):
        n = sum(1 for c in cases if not c.expanded and (ferry[c.name].status, ferry[c.name].kind)
                == (status, kind))
        lines.append(f"| {status} | {KIND_TEXT.get(kind, kind)} | {n} | {counts[(status, kind)] - n} |")
    return lines


KIND_TEXT = {
    "opset": "the model's opset is outside what the importer takes",
    "dtype": "a dtype ferry does not have (test data or model)",
    "op": "an op the importer does not convert",
    "unsupported": "an attribute, input or form the importer declines",
    "wrong result": "a result beyond the tolerance",
    "error": "another error",
    "crash": "ferry-run crashed",
    "timeout": "ferry-run timed out",
}


def details(cases: list[Case], ferry: dict, ort: dict | None) -> list[str]:
    lines = ["### Cases that did not pass", "",
             "| case | op | opset | ferry | why |" + (" ONNX Runtime |" if ort is not None else ""),
             "|---|---|---:|---|---|" + ("---|" if ort is not None else "")]
    for c in cases:
        r = ferry[c.name]
        if r.status == "passed":
            continue
        why = r.reason.replace("|", "\\|")[:300]
        line = f"| {c.name} | {c.op} | {c.opset} | {r.status} ({r.kind}) | {why} |"
        if ort is not None:
            o = ort[c.name]
            line += f" {o.status}" + (f": {o.reason.replace('|', '/')[:120]}" if o.reason else "") + " |"
        lines.append(line)
    return lines


def summary(cases: list[Case], ferry: dict) -> str:
    n = len(cases)
    counts = {k: sum(1 for c in cases if ferry[c.name].status == k)
              for k in ("passed", "failed", "unsupported")}
    return (f"{counts['passed']}/{n} passed ({pct(counts['passed'], n)}), {counts['failed']} "
            f"failed, {counts['unsupported']} unsupported")


def main() -> int:
    ap = argparse.ArgumentParser(description="Runs ONNX's backend node test cases through ferry-run.")
    ap.add_argument("--ferry-run", required=True, type=Path, help="the ferry-run binary")
    ap.add_argument("--ops", default="", help="ops to run (comma or space separated; default: "
                                              "the imported ops' list)")
    ap.add_argument("--cases", type=Path, help="a folder of node cases (default: the onnx "
                                               "package's, generated into --cache when absent)")
    ap.add_argument("--cache", type=Path, default=Path("build/onnx-node-cases"),
                    help="where generated node cases are kept")
    ap.add_argument("--out", type=Path, default=Path("build/onnx-conformance.md"),
                    help="the markdown report")
    ap.add_argument("--ort", action="store_true", help="run ONNX Runtime on the same cases too")
    ap.add_argument("--no-expanded", action="store_true", help="leave the function-body cases out")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per ferry-run")
    ap.add_argument("--copy-subset", type=Path, metavar="DIR",
                    help="copy the cases DIR/CASES lists into DIR (the ctest subset), run nothing")
    ap.add_argument("--min-pass", type=float, help="exit 1 when fewer than this percentage of the "
                                                   "(not function-body) cases pass")
    args = ap.parse_args()

    ops = ISSUE_OPS
    if args.ops:
        ops = [o for o in re.split(r"[,\s]+", args.ops) if o]
        unknown = [o for o in ops if o not in ISSUE_OPS]
        if unknown:
            print(f"onnx-conformance: --ops: not in the imported ops' list: {', '.join(unknown)}",
                  file=sys.stderr)
            return 2
    if not os.access(args.ferry_run, os.X_OK):
        print(f"onnx-conformance: no ferry-run at {args.ferry_run}", file=sys.stderr)
        return 2

    root = args.cases or node_case_dir(args.cache)
    if args.copy_subset:
        return copy_subset(root, args.copy_subset)
    cases = load_cases(root, ops)
    if args.no_expanded:
        cases = [c for c in cases if not c.expanded]
    if not cases:
        print(f"onnx-conformance: no node cases of {', '.join(ops)} in {root}", file=sys.stderr)
        return 2
    print(f"onnx-conformance: {len(cases)} cases from {root}, {args.jobs} at a time")

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        ferry = dict(zip((c.name for c in cases),
                         pool.map(lambda c: run_ferry(args.ferry_run, c, args.timeout), cases)))
    ort = {c.name: run_ort(c) for c in cases} if args.ort else None
    seconds = time.monotonic() - start

    main_cases = [c for c in cases if not c.expanded]
    body_cases = [c for c in cases if c.expanded]
    report = [
        "## ONNX node test cases",
        "",
        (f"node cases of `{args.cases}`" if args.cases else
         f"onnx {onnx.__version__} node cases ({'shipped' if shipped_node_dir() else 'generated'})")
        + f", ferry-run `{args.ferry_run}`"
        + (f", ONNX Runtime {__import__('onnxruntime').__version__}" if ort is not None else "")
        + f"; rtol {NODE_RTOL:g}, atol {NODE_ATOL:g} (ferry-run's --check-dir defaults).",
        "",
        f"Node cases: {summary(main_cases, ferry)}.",
    ]
    if body_cases:
        report.append(f"Function-body (`_expanded`) cases: {summary(body_cases, ferry)}.")
    report += [""] + table("Per op", main_cases, ferry, ort, ops)
    if body_cases:
        report += [""] + table("Function bodies (`_expanded`), by the op they expand", body_cases,
                               ferry, ort, ops)
    report += [""] + reasons(cases, ferry) + [""] + details(cases, ferry, ort) + [""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report))

    print(f"onnx-conformance: node cases: {summary(main_cases, ferry)}")
    if body_cases:
        print(f"onnx-conformance: function-body cases: {summary(body_cases, ferry)}")
    if ort is not None:
        print(f"onnx-conformance: ONNX Runtime, node cases: {summary(main_cases, ort)}")
    for op in ops:
        mine = [c for c in main_cases if c.op == op]
        bad = [c for c in mine if ferry[c.name].status != "passed"]
        if bad:
            print(f"  {op}: {len(mine) - len(bad)}/{len(mine)} passed; "
                  + ", ".join(f"{c.name} ({ferry[c.name].status})" for c in bad[:4])
                  + (", ..." if len(bad) > 4 else ""))
    print(f"onnx-conformance: {seconds:.0f} s; the full table is in {args.out}")
    if args.min_pass is not None and main_cases:
        rate = 100.0 * sum(ferry[c.name].status == "passed" for c in main_cases) / len(main_cases)
        if rate < args.min_pass:
            print(f"onnx-conformance: {rate:.1f} % passed, below --min-pass {args.min_pass:g}",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
