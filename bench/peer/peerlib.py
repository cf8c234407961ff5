"""bench/peer/peerlib.py — what the peer benchmarks share: running a command or failing with its
output, the JSON line a ferry-bench-* driver prints, medians, and a description of the machine
(CPU model, cores, load) to print beside every table. Standard library only.
"""
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_checked(cmd, who, env=None, **popen):
    """stdout of `cmd`; exits naming `who` with the command's output when it fails. `popen`:
    more of subprocess.run's arguments (preexec_fn)."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, **popen)
    if proc.returncode != 0:
        sys.exit(f"{who}: {' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                 f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def last_json_line(text):
    """The last line of `text` as JSON, or None when it is not JSON."""
    lines = text.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


def median(values):
    return statistics.median(values)


def cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def has_avx512():
    try:
        return " avx512f " in pathlib.Path("/proc/cpuinfo").read_text().replace("\n", " ")
    except OSError:
        return False


def machine():
    """One line: CPU model, cores (this process may use / online), AVX-512, load averages."""
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"{cpu_model()}, {len(os.sched_getaffinity(0))} of {os.cpu_count()} cores usable"
            f"{', AVX-512' if has_avx512() else ''}; {platform.system()} {platform.release()}; "
            f"load average {load}")


def git_revision():
    proc = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown revision"
