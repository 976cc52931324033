"""bench/tables.py and compare_contexts' records: every run stays as a record, a rerun
adds one, and the study's tables in the docs and BENCHMARKS.md are the records'."""

import copy
import glob
import json
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import compare_contexts  # noqa: E402 (bench/ is not a package)
import tables  # noqa: E402

from acvi_tf import config as config_lib  # noqa: E402

import _report  # noqa: E402


@pytest.fixture(scope="module")
def records():
    return tables.load_records()


def test_the_docs_tables_are_the_records(records):
    """Every table block of README.md and docs/acvi.md is what ``python bench/tables.py``
    writes from the records it names; run it after adding records or editing a table."""
    assert tables.stale(records=records) == {}
    for doc in tables.DOCS:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        assert text.count("<!-- table: ") == text.count("<!-- /table -->") > 0, doc


def test_a_digit_changed_in_a_record_or_a_doc_is_found(records, tmp_path):
    changed = copy.deepcopy(records)
    changed["translation-shipped-400steps/sa-8de5d81-tf2.21.0-seeds1-8"]["runs"][0]["metric"] = 96.6
    # the README's Pig Latin row and the eight-seed table of docs/acvi.md quote it
    stale = sorted(tables.stale(records=changed))
    assert stale == [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "acvi.md")]
    for doc in tables.DOCS:
        os.makedirs(tmp_path / os.path.dirname(doc), exist_ok=True)
        shutil.copy(os.path.join(ROOT, doc), tmp_path / doc)
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    (tmp_path / "README.md").write_text(readme.replace("| 1.59 ± 0.06 |", "| 1.58 ± 0.06 |"))
    stale = tables.stale(root=str(tmp_path), records=records)
    assert list(stale) == [str(tmp_path / "README.md")]
    assert stale[str(tmp_path / "README.md")] == readme


def test_a_table_of_a_missing_record_or_name_is_an_error(records):
    pick = tables.Pick(tables.PIG_LATIN, "sa", "dc81116", "1-8")
    with pytest.raises(
        tables.RecordError,
        match="0 records of sa on translation/shipped/400 at revision dc81116 with seeds 1-8",
    ):
        pick.find(records)
    assert tables.Pick(tables.PIG_LATIN, "sa", "dc81116").find(records)["tensorflow"] == "2.15.1"
    with pytest.raises(tables.RecordError, match="README.md: no table named 'nope'"):
        tables.render("<!-- table: nope -->\n<!-- /table -->\n", records, "README.md")


def test_benchmarks_rows_are_the_records_they_name(records):
    """BENCHMARKS.md's study tables come from the results files, whose rows are the
    latest record of each variant."""
    paths = glob.glob(os.path.join(ROOT, "bench", "results", "compare_contexts-*.json"))
    assert len(paths) == 6
    for path in paths:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        assert result["rows"] == tables.benchmark_rows(result["data"], records), path


def _record(metric):
    return dict(
        task="translation",
        corpus="shipped",
        steps=400,
        variant="sa",
        revision="abc1234+dirty",
        tensorflow="2.21.0",
        seeds=[1, 2],
        runs=[dict(seed=1, nll=0.5, metric=metric), dict(seed=2, nll=0.7, metric=90.0)],
    )


def test_a_rerun_adds_a_record_and_keeps_the_old_one(tmp_path):
    first = tables.write_record(_record(94.0), str(tmp_path))
    assert first == "translation-shipped-400steps/sa-abc1234-dirty-tf2.21.0-seeds1-2"
    assert tables.write_record(_record(94.0), str(tmp_path)) == first
    assert tables.write_record(_record(95.0), str(tmp_path)) == first + "-2"
    kept = tables.load_records(str(tmp_path))
    assert [kept[first]["runs"][0]["metric"], kept[first + "-2"]["runs"][0]["metric"]] == [94, 95]
    assert tables.benchmark_cells(kept[first]) == [
        "0.6000 +- 0.1000",
        "92.0000 +- 2.0000",
        "",  # runs that did not record their KL
        "1,2",
        "abc1234+dirty",
        "2.21.0",
    ]


def test_runs_made_elsewhere_become_records_and_a_rerun_adds_one(tmp_path, monkeypatch):
    """compare_contexts on a folder of runs (the per-run files of an earlier version,
    without revision) trains nothing and keeps them as a record at ``--revision``; a
    later run of another seed adds a record and leaves that one as it was."""
    monkeypatch.setattr(tables, "RECORDS", str(tmp_path / "records"))
    monkeypatch.setattr(_report, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(_report, "BENCHMARKS_MD", str(tmp_path / "BENCHMARKS.md"))
    monkeypatch.setattr(_report, "machine", lambda: "a CPU, 2 cores")
    monkeypatch.setattr(_report, "has_gpu", lambda: False)
    monkeypatch.setattr(_report, "git_revision", lambda: "def5678")
    monkeypatch.setattr(sys, "argv", [os.path.join(ROOT, "bench", "compare_contexts.py")])
    runs = tmp_path / "runs"
    runs.mkdir()
    for seed, bleu in ((1, 94.0), (2, 90.0)):
        run = dict(variant="sa", seed=seed, steps=400, flags=["--context=sa"], nll=0.5, metric=bleu)
        (runs / ("sa_seed%d.json" % seed)).write_text(json.dumps(run))
        os.utime(runs / ("sa_seed%d.json" % seed), (86400 * seed, 86400 * seed))
    trained = []

    def translation(variant, seed, steps, out_dir, data):
        trained.append(seed)
        return 0.25, 97.0, dict(kl_per_token=0.125, train_nll_per_token=0.5)

    monkeypatch.setitem(compare_contexts.TASKS, "translation", (translation, "dev BLEU"))
    argv = ["prog", "--task=translation", "--contexts=sa", "--out_dir=" + str(runs)]
    compare_contexts.run(
        config_lib.parse(
            compare_contexts.define_flags, argv + ["--seeds=1,2", "--revision=abc1234"]
        )
    )
    old = "translation-shipped-400steps/sa-abc1234-tf"
    [old_id] = tables.load_records()
    assert old_id.startswith(old) and old_id.endswith("-seeds1-2") and not trained
    assert tables.load_records()[old_id]["date"] == "1970-01-03 00:00 UTC"  # the latest run's
    with open(os.path.join(tables.RECORDS, old_id + ".json"), encoding="utf-8") as f:
        old_text = f.read()
    compare_contexts.run(config_lib.parse(compare_contexts.define_flags, argv + ["--seeds=1,2,3"]))
    assert trained == [3]
    kept = tables.load_records()
    [new_id] = set(kept) - {old_id}
    assert new_id.startswith("translation-shipped-400steps/sa-def5678-tf")
    assert new_id.endswith("-seeds3") and kept[new_id]["runs"][0]["metric"] == 97.0
    assert kept[new_id]["runs"][0]["kl_per_token"] == 0.125
    assert kept[new_id]["runs"][0]["train_nll_per_token"] == 0.5
    assert "kl_per_token" not in kept[old_id]["runs"][0]  # made before runs recorded it
    with open(os.path.join(tables.RECORDS, old_id + ".json"), encoding="utf-8") as f:
        assert f.read() == old_text
    result = _report.load(("translation", "shipped", "400steps"))
    assert result["data"] == {"sa": new_id}
    assert "| sa | 0.2500 +- 0.0000 | 97.0000 +- 0.0000 | 0.1250 +- 0.0000 | 3 | def5678 |" in (
        (tmp_path / "BENCHMARKS.md").read_text()
    )
