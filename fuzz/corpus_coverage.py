"""What the fuzz corpus reaches of what ships: ``python fuzz/corpus_coverage.py [--json FILE] [target...]``.

Every input of ``fuzz/corpus/TARGET`` (what the fuzzers kept: ``fuzz/make_corpus.py``'s seeds and what the runs
added) and of ``tests/fixtures/hostile/TARGET`` goes through its target once, in one process, under coverage.py
(lines and branches) with setup.py's ``COMPILED`` modules loaded from their ``.py`` (``fuzz/source_import.py``:
the same source the extensions are compiled from). Prints, per shipped module of ``inspector`` and ``decoders``
(``decoders/generated`` summed as one row), the statements and branches and the share of them reached, and
the total; ``--json`` writes the same.

The ``.pyx`` modules (the generated fast readers of ``decoders/accel``, the native modules) are not Python and
not measured here: the fuzzers see their edges through the instrumented build (``fuzz/build_native.py``), but
libFuzzer cannot print per-module coverage without a sanitizer runtime to symbolize it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
REPO = FUZZ.parent
sys.path.insert(0, str(REPO))

from fuzz import source_import  # noqa: E402 - imports nothing of the package


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz/corpus_coverage.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*")
    parser.add_argument("--corpus", type=Path, default=FUZZ / "corpus")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import coverage

    cov = coverage.Coverage(branch=True, data_file=None, source=[str(REPO / "inspector"), str(REPO / "decoders")],
                            omit=["*/codegen/*", "*/spec/*", "*/regen.py", "*/_sources.py"])
    cov.start()
    source_import.install(source_import.source_modules())
    from fuzz.targets import TARGETS

    names = args.targets or list(TARGETS)
    runs: dict[str, dict[str, float]] = {}
    for name in names:
        saved = REPO / "tests" / "fixtures" / "hostile" / name
        inputs = sorted((args.corpus / name).glob("*")) + sorted(saved.glob("*"))
        started = time.monotonic()
        failed = 0
        for path in inputs:
            try:
                TARGETS[name](path.read_bytes())
            except Exception:  # noqa: BLE001 - a finding is the fuzzers' business; coverage counts what ran
                failed += 1
        runs[name] = {"inputs": len(inputs), "failed": failed, "seconds": round(time.monotonic() - started, 1)}
        print(f"{name:12} {len(inputs):6} inputs, {failed} raised, {runs[name]['seconds']} s", file=sys.stderr)
    cov.stop()
    rows: dict[str, list[int]] = {}
    data = cov.get_data()
    for filename in sorted(data.measured_files()):
        rel = Path(filename).resolve().relative_to(REPO)
        if rel.suffix != ".py" or rel.parts[0] not in ("inspector", "decoders"):
            continue
        analysis = cov._analyze(filename)  # noqa: SLF001 - coverage's per-file numbers
        numbers = analysis.numbers
        key = "decoders/generated/*" if rel.parts[:2] == ("decoders", "generated") else str(rel)
        row = rows.setdefault(key, [0, 0, 0, 0])
        row[0] += numbers.n_statements
        row[1] += numbers.n_statements - numbers.n_missing
        row[2] += numbers.n_branches
        row[3] += numbers.n_branches - numbers.n_missing_branches
    compiled = {str(p.relative_to(REPO)) for p in source_import.compiled_modules().values()}
    total = [sum(r[i] for r in rows.values()) for i in range(4)]
    print(f"{'module':44} {'lines':>13} {'branches':>13}")
    for key, (n, hit, b, bhit) in sorted(rows.items()):
        mark = " (compiled)" if key in compiled else ""
        print(f"{key + mark:44} {hit:5}/{n:<5} {100 * hit / max(n, 1):3.0f}% "
              f"{bhit:5}/{b:<5} {100 * bhit / max(b, 1):3.0f}%")
    print(f"{'total':44} {total[1]:5}/{total[0]:<5} {100 * total[1] / max(total[0], 1):3.0f}% "
          f"{total[3]:5}/{total[2]:<5} {100 * total[3] / max(total[2], 1):3.0f}%")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "modules": rows, "total": total}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
