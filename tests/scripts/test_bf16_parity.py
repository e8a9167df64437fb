"""scripts/bf16_parity.py: collect from a record or a CSV, the table's overlap verdicts, refusals."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bf16_parity.py"
_spec = importlib.util.spec_from_file_location("bf16_parity", SCRIPT)
parity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parity)


@pytest.fixture
def out(tmp_path, monkeypatch):
    monkeypatch.setattr(parity, "OUT", tmp_path / "out")
    return tmp_path


def test_record_and_csv_give_one_table(out):
    record = out / "m.test.json"
    # study records hold [N, answer_type, count, correct]
    record.write_text(json.dumps({"accuracy": [[32, "ar_valid", 1000, 500], [32, "passkey", 400, 400],
                                               [64, "ar_expired_stale", 0, 0]],
                                  "command": "swar-bench test x", "code": {"commit": "abc"}}))
    csv_path = out / "answer_type_accuracy.csv"
    csv_path.write_text("n_writes,answer_type,correct,count,accuracy\n32,ar_valid,600,1000,0.6\n"
                        "32,passkey,399,400,0.9975\n64,ar_expired_stale,0,0,none\n")
    parity.collect("M0.99", "32-true", record, None)
    parity.collect("M0.99", "bf16-mixed", csv_path, None)
    assert json.loads((out / "out" / "M0.99.32-true.json").read_text())["commit"] == "abc"
    text = parity.table()
    rows = [r.split("|") for r in text.splitlines() if r.startswith("| M0.99")]
    assert [(r[2].strip(), r[3].strip(), r[6].strip()) for r in rows] == [
        ("32", "ar_valid", "**no**"),  # 0.5 vs 0.6 over 1000 items: Wilson intervals apart
        ("32", "passkey", "yes"),
    ]
    assert "overlap in 1 of 2 cells" in text and "n32 ar_valid (0.500 vs 0.600)" in text


def test_a_missing_side_is_named(out):
    csv_path = out / "a.csv"
    csv_path.write_text("n_writes,answer_type,correct,count\n32,all,1,2\n")
    parity.collect("X", "bf16-mixed", csv_path, None)
    assert "- **X**: not compared (no 32-true result)" in parity.table()


def test_a_source_without_accuracy_is_refused_in_one_line(out, capsys):
    bad = out / "fit.json"
    bad.write_text("{}")
    assert parity.main(["collect", "X", "32-true", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no 'accuracy' field" in err


def test_docs_without_markers_are_refused(out, capsys):
    doc = out / "doc.md"
    doc.write_text("# nothing\n")
    assert parity.main(["table", "--docs", str(doc)]) == 2
    assert doc.read_text() == "# nothing\n"
