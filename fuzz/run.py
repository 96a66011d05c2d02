"""Run the fuzz targets: ``python fuzz/run.py --seconds N [target...]``.

Each target runs in its own process (``fuzz/fuzz_one.py``, atheris/libFuzzer) for ``--seconds``, with a
per-input time limit (``--timeout``) and a memory limit (``--rss-limit-mb``). The corpus of a target
lives in ``fuzz/corpus/TARGET`` (``fuzz/make_corpus.py`` seeds it from the real captures; not committed);
the committed regression inputs in ``tests/fixtures/hostile/TARGET`` are always read as extra seeds.
Findings (crash, timeout, out-of-memory inputs) are written to ``fuzz/artifacts/TARGET/``.

The plain modules that ship compiled are fuzzed from their ``.py`` source, instrumented (see
``fuzz/source_import.py``); ``--compiled`` fuzzes the extensions as shipped, blind to their coverage.

Prints one line per target (executions, coverage, corpus size, findings) and exits 1 if anything
was found. ``--json FILE`` also writes the results as JSON (for docs/fuzzing.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
REPO = FUZZ.parent
REGRESSIONS = REPO / "tests" / "fixtures" / "hostile"

sys.path.insert(0, str(REPO))
from fuzz.targets import MAX_LEN, TARGETS  # noqa: E402 - after the path set-up

_DONE = re.compile(r"Done (\d+) runs in (\d+) second")
_STATS = re.compile(r"cov: (\d+) ft: (\d+) corp: (\d+)/")
_EXECS = re.compile(r"stat::number_of_executed_units: (\d+)")
_RSS = re.compile(r" rss: (\d+)Mb")
_ARTIFACT = re.compile(r"(?:Test unit written to|written to) (\S+)")
_KINDS = (("Uncaught Python exception", "crash"), ("ERROR: libFuzzer: timeout", "timeout"),
          ("ERROR: libFuzzer: out-of-memory", "out-of-memory"), ("ERROR: libFuzzer: deadly signal", "crash"))


@dataclass
class Result:
    target: str
    seconds: float
    execs: int = 0
    cov: int = 0
    features: int = 0
    corpus: int = 0
    peak_rss_mb: int = 0
    exit_code: int = 0
    findings: list[str] = field(default_factory=list)  # "kind: artifact path"
    error: str = ""  # the first lines of a finding's report


def run_target(name: str, seconds: int, *, timeout: int, rss_limit_mb: int, corpus: Path, artifacts: Path,
               extra_args: list[str] | None = None, log: Path | None = None, compiled: bool = False) -> Result:
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    dirs = [str(corpus)]
    if (REGRESSIONS / name).is_dir():
        dirs.append(str(REGRESSIONS / name))
    dictionary = FUZZ / "dicts" / f"{name}.dict"
    cmd = [sys.executable, str(FUZZ / "fuzz_one.py"), *(["--compiled"] if compiled else []), name, *dirs,
           f"-max_total_time={seconds}", f"-timeout={timeout}", f"-rss_limit_mb={rss_limit_mb}",
           f"-max_len={MAX_LEN[name]}", f"-artifact_prefix={artifacts}/", "-print_final_stats=1",
           *([f"-dict={dictionary}"] if dictionary.exists() else []), *(extra_args or [])]
    started = time.monotonic()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", cwd=REPO, env=env,
                              timeout=seconds * 3 + timeout * 4 + 120)
        output, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        output += "\nrun.py: the fuzzer process overran its wall-clock budget and was killed"
        code = -9
    elapsed = time.monotonic() - started
    if log is not None:
        log.write_text(output)
    result = Result(name, round(elapsed, 1), exit_code=code)
    for stats in _STATS.finditer(output):
        result.cov, result.features, result.corpus = int(stats.group(1)), int(stats.group(2)), int(stats.group(3))
    done = _EXECS.search(output) or _DONE.search(output)
    if done:
        result.execs = int(done.group(1))
    result.peak_rss_mb = max((int(x) for x in _RSS.findall(output)), default=0)
    kind = next((k for needle, k in _KINDS if needle in output), "crash" if code not in (0,) else "")
    if kind:
        paths = _ARTIFACT.findall(output) or ["(no artifact written)"]
        result.findings = [f"{kind}: {p}" for p in paths]
        lines = [ln for ln in output.splitlines() if not ln.startswith(("INFO:", "#", '"'))]
        result.error = "\n".join(lines[:40])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", metavar="target", help=f"default: all ({', '.join(TARGETS)})")
    parser.add_argument("--seconds", type=int, default=10, help="fuzzing time per target (default 10)")
    parser.add_argument("--timeout", type=int, default=10, help="per-input time limit in seconds (default 10)")
    parser.add_argument("--rss-limit-mb", type=int, default=1024, help="memory limit per target (default 1024)")
    parser.add_argument("--fresh", action="store_true",
                        help="start from an empty temporary corpus (plus the regression inputs) instead of "
                             "fuzz/corpus/TARGET")
    parser.add_argument("--compiled", action="store_true",
                        help="import the compiled extensions of the plain hot-path modules, as shipped (not "
                             "instrumented: coverage blind to them) instead of their instrumented .py source")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--logs", type=Path, help="keep each target's fuzzer output in this directory")
    args = parser.parse_args(argv)
    names = args.targets or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; targets: {', '.join(TARGETS)}")
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    results = []
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-run-")) if args.fresh else None
    try:
        for name in names:
            corpus = (scratch / name) if scratch else FUZZ / "corpus" / name
            result = run_target(name, args.seconds, timeout=args.timeout, rss_limit_mb=args.rss_limit_mb,
                                corpus=corpus, artifacts=FUZZ / "artifacts" / name,
                                log=(args.logs / f"{name}.log") if args.logs else None, compiled=args.compiled)
            results.append(result)
            status = "; ".join(result.findings) if result.findings else "no findings"
            print(f"{name:12} {result.execs:>9,} execs  cov {result.cov:>5}  ft {result.features:>6}  "
                  f"corpus {result.corpus:>5}  rss {result.peak_rss_mb:>4} MB  {result.seconds:>6.1f} s  {status}",
                  flush=True)
            if result.error:
                print("    " + result.error.replace("\n", "\n    "), file=sys.stderr)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 1 if any(r.findings for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
