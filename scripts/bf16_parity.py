"""bf16 parity: do fits in ``bf16-mixed`` reach the test accuracies of ``32-true`` fits?

    python scripts/bf16_parity.py collect MECHANISM PRECISION SOURCE [--record FIT_JSON]
    python scripts/bf16_parity.py table [--docs docs/BENCHMARKS.md] [--seeds MECHANISM=REC,REC,...]

``collect`` copies one test result into ``results/bf16_parity/MECHANISM.PRECISION.csv``
(columns ``n_writes, answer_type, correct, count``; PRECISION is ``32-true`` or ``bf16-mixed``)
and its provenance into ``MECHANISM.PRECISION.json`` (the fit and test commands, the code
commit). SOURCE is either a study test record (``*.test.json``: its ``accuracy`` rows
``[N, answer_type, count, correct]``) or the ``answer_type_accuracy.csv`` that ``swar-bench
test`` writes; ``--record`` names the fit record or a JSON with ``fit_command``,
``test_command`` and ``commit``, when SOURCE does not hold them.

``table`` reads every pair of CSVs in ``results/bf16_parity/`` and prints, per mechanism, N and
answer type (types with no items are skipped), the two accuracies with their 95% Wilson
intervals (``swar_bench.utils.intervals.wilson``), whether the intervals overlap, and whether each
accuracy lies inside the other's interval; then one verdict line per mechanism (and, with
``--seeds``, the range of the cells apart over other float32 seeds' test records: the spread a
change of training trajectory alone gives, which the Wilson intervals of one test do not hold). With ``--docs`` it
replaces the text between ``<!-- bf16-parity:begin -->`` and ``<!-- bf16-parity:end -->`` in that
file (written via a temporary file and a rename). Exits 2 on bad arguments or a source it cannot
read (one line naming it).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swar_bench.utils.intervals import wilson

OUT = ROOT / "results" / "bf16_parity"
PRECISIONS = ("32-true", "bf16-mixed")
BEGIN, END = "<!-- bf16-parity:begin -->", "<!-- bf16-parity:end -->"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def read_source(source: Path) -> tuple[list[tuple[int, str, int, int]], dict]:
    """``([(n_writes, answer_type, correct, count)], provenance)`` of a test record or CSV."""
    if source.suffix == ".json":
        record = json.loads(source.read_text())
        if "accuracy" not in record:
            raise ValueError(f"{source}: no 'accuracy' field; expected a study test record (*.test.json)")
        rows = [(int(n), str(kind), int(correct), int(count)) for n, kind, count, correct in record["accuracy"]]
        prov = {"test_command": record.get("command"), "commit": (record.get("code") or {}).get("commit")}
        return rows, prov
    with source.open() as f:
        rows = [(int(r["n_writes"]), r["answer_type"], int(r["correct"]), int(r["count"])) for r in csv.DictReader(f)]
    return rows, {}


def collect(mechanism: str, precision: str, source: Path, record: Path | None) -> Path:
    rows, prov = read_source(source)
    if record is not None:
        extra = json.loads(record.read_text())
        if "command" in extra:  # a study fit record
            prov.update(fit_command=extra["command"], commit=(extra.get("code") or {}).get("commit"))
        else:
            prov.update({k: extra[k] for k in ("fit_command", "test_command", "commit") if k in extra})
    prov.update(mechanism=mechanism, precision=precision, source=source.name)
    lines = ["n_writes,answer_type,correct,count"] + [f"{n},{kind},{c},{m}" for n, kind, c, m in rows]
    path = OUT / f"{mechanism}.{precision}.csv"
    _write_atomic(path, "\n".join(lines) + "\n")
    _write_atomic(path.with_suffix(".json"), json.dumps(prov, indent=1, sort_keys=True) + "\n")
    return path


def _load(path: Path) -> dict[tuple[int, str], tuple[int, int]]:
    with path.open() as f:
        return {(int(r["n_writes"]), r["answer_type"]): (int(r["correct"]), int(r["count"])) for r in csv.DictReader(f)}


def _overlap(pa, pb) -> bool:
    return pa.low <= pb.high and pb.low <= pa.high


def _fmt(p) -> str:
    return f"{p.accuracy:.3f} [{p.low:.3f}, {p.high:.3f}] ({p.count})"


def table(seed_records: dict[str, list[Path]] | None = None) -> str:
    mechanisms = sorted(
        {p.name[: -len(f".{q}.csv")] for p in OUT.glob("*.csv") for q in PRECISIONS if p.name.endswith(f".{q}.csv")}
    )
    out = [
        "| mechanism | N | answer type | fp32 accuracy [95% Wilson] (items) | bf16-mixed accuracy [95% Wilson] (items) | intervals overlap | each inside the other's |",
        "|---|---:|---|---:|---:|:---:|:---:|",
    ]
    verdicts = []
    for m in mechanisms:
        files = [OUT / f"{m}.{p}.csv" for p in PRECISIONS]
        if not all(f.is_file() for f in files):
            missing = [p for p, f in zip(PRECISIONS, files) if not f.is_file()]
            verdicts.append(f"- **{m}**: not compared (no {', '.join(missing)} result)")
            continue
        a, b = (_load(f) for f in files)
        cells = overlap = inside = 0
        apart = []
        for key in sorted(set(a) & set(b)):
            if a[key][1] == 0 or b[key][1] == 0:
                continue
            pa, pb = wilson(*a[key]), wilson(*b[key])
            ov = _overlap(pa, pb)
            ins = pa.low <= pb.accuracy <= pa.high and pb.low <= pa.accuracy <= pb.high
            cells += 1
            overlap += ov
            inside += ins
            if not ov:
                apart.append(f"n{key[0]} {key[1]} ({pa.accuracy:.3f} vs {pb.accuracy:.3f})")
            out.append(f"| {m} | {key[0]} | {key[1]} | {_fmt(pa)} | {_fmt(pb)} | {'yes' if ov else '**no**'} | {'yes' if ins else 'no'} |")
        line = f"- **{m}**: intervals overlap in {overlap} of {cells} cells, each accuracy inside the other's interval in {inside}"
        verdicts.append(line + (f"; apart: {', '.join(apart)}" if apart else ""))
        records = (seed_records or {}).get(m, [])
        if records and apart:
            seeds = [{(n, k): (c, t) for n, k, c, t in read_source(r)[0]} for r in records]
            spans = []
            for key in sorted(set(a) & set(b)):
                if a[key][1] and b[key][1] and not _overlap(wilson(*a[key]), wilson(*b[key])):
                    accs = [sd[key][0] / sd[key][1] for sd in seeds if key in sd and sd[key][1]]
                    spans.append(f"n{key[0]} {key[1]} {min(accs):.3f}..{max(accs):.3f}")
            verdicts.append(
                f"  - the same cells over the {len(records)} float32 seeds of the study ({', '.join(r.name for r in records)}): "
                + "; ".join(spans)
            )
    return "\n".join(out) + "\n\n" + "\n".join(verdicts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("mechanism")
    c.add_argument("precision", choices=PRECISIONS)
    c.add_argument("source", type=Path)
    c.add_argument("--record", type=Path, default=None)
    t = sub.add_parser("table")
    t.add_argument("--docs", type=Path, default=None)
    t.add_argument("--seeds", action="append", default=[], metavar="MECHANISM=RECORD,...",
                   help="float32 test records of other seeds of MECHANISM: their range is shown for the cells apart")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "collect":
            print(f"wrote {collect(args.mechanism, args.precision, args.source, args.record)}")
            return 0
        seeds = {}
        for spec in args.seeds:
            name, _, paths = spec.partition("=")
            seeds[name] = [Path(p) for p in paths.split(",") if p]
        text = table(seeds)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.docs is None:
        print(text, end="")
        return 0
    doc = args.docs.read_text()
    if BEGIN not in doc or END not in doc:
        print(f"error: {args.docs} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    _write_atomic(args.docs, head + BEGIN + "\n" + text + END + tail)
    print(f"wrote {args.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
