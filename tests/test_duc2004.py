"""DUC 2004 task 1: data_prep.duc2004 (builder) and pointer_generator.duc2004_eval."""

import json
import os

import pytest
from duc2004_corpus import DOCUMENTS, MODELS, write_tree

from acvi_tf.formats.bin_files import read_bin_file
from acvi_tf.metrics import rouge
from data_prep import duc2004
from pointer_generator import duc2004_scoring


@pytest.fixture
def duc(tmp_path):
    """``(docs_dir, models_dir)`` of the fixture corpus."""
    docs_dir = write_tree(tmp_path / "docs", dict(DOCUMENTS, **{"d30001t/.DS_Store": "x"}))
    return docs_dir, write_tree(tmp_path / "models", MODELS)


def test_parse_documents_cleans_markup_and_keeps_file_order():
    text = (
        "<DOC>\n<DOCNO> A1 </DOCNO>\n<TEXT>\nOne &amp; <P>two</P>\n&UR;three.\n"
        '</TEXT>\n</DOC>\n<DOC><DOCNO>A2</DOCNO><TEXT type="x">Fine.</TEXT></DOC>\n'
    )
    documents = duc2004.parse_documents(text, "f", "d30001t")
    assert [(d.docid, d.text, d.line, d.docset) for d in documents] == [
        ("A1", "One & two three.", 1, "d30001t"),
        ("A2", "Fine.", 8, "d30001t"),
    ]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("<DOC>\n<TEXT>x</TEXT>\n</DOC>\n", 1, "no <DOCNO>"),
        (
            "<DOC><DOCNO>A</DOCNO></DOC>\n\n<DOC>\n<DOCNO>B</DOCNO>\n<TEXT>y\n</DOC>\n",
            1,
            "no <TEXT>",
        ),
        (
            "<DOC><DOCNO>A</DOCNO><TEXT>x</TEXT></DOC>\n<DOC>\n<DOCNO>B</DOCNO>\n",
            2,
            "without its </DOC>",
        ),
        ("<DOC><DOCNO> </DOCNO><TEXT>x</TEXT></DOC>\n", 1, "empty <DOCNO>"),
        ("<DOC><DOCNO>A</DOCNO><DOCNO>B</DOCNO><TEXT>x</TEXT></DOC>", 1, "more than one <DOCNO>"),
        ("just text\n", 1, "no <DOC> element"),
    ],
)
def test_bad_document_structure_names_file_and_line(text, line, message):
    with pytest.raises(duc2004.DucDataError, match="^doc.sgml:%d: .*%s" % (line, message)):
        duc2004.parse_documents(text, "doc.sgml", "d30001t")


def test_read_documents_orders_sets_and_files(duc):
    stats = duc2004.Stats()
    documents = duc2004.read_documents(duc[0], stats)
    assert [(d.docset, d.docid) for d in documents] == [
        ("d30001t", "APW19981016.0240"),
        ("d30001t", "NYT19981002.0309"),
        ("d30002t", "APW19981027.0241"),
        ("d30003t", "APW19981101.0843"),
    ]
    assert documents[0].text == (
        "Cambodian leader Hun Sen on Friday rejected opposition demands for talks abroad. "
        "``It is detrimental,'' he said. Rainsy & Ranariddh stayed outside the country."
    )
    assert documents[1].text == "Hurricane Georges the storm of the year hit Key West."
    assert documents[2].text == (
        "The cease-fire in Kosovo held on Tuesday. Talks resume Monday <officials>."
    )
    assert (stats.document_sets, stats.documents_read) == (3, 4)


def test_duplicate_docno_is_an_error(tmp_path):
    docs_dir = write_tree(
        tmp_path / "docs",
        {
            "d1t/A": "<DOC><DOCNO>APW1</DOCNO><TEXT>x</TEXT></DOC>",
            "d2t/B": "\n<DOC><DOCNO>apw1</DOCNO><TEXT>y</TEXT></DOC>",
        },
    )
    with pytest.raises(
        duc2004.DucDataError,
        match=r"B:2: DOCNO apw1 was already read from "
        r".*A:1",
    ):
        duc2004.read_documents(docs_dir, duc2004.Stats())


@pytest.mark.parametrize(
    "name, expected",
    [
        ("D30001.P.10.T.A.APW19981016.0240", ("D30001", "A", "APW19981016.0240")),
        ("d30045t.p.10.t.h.NYT19981125.0417", ("d30045", "H", "NYT19981125.0417")),
        ("D30001.M.100.T.A", None),
        ("D30001.P.10.T.AB.APW19981016.0240", None),
        ("README", None),
    ],
)
def test_model_file_names(name, expected):
    fields = duc2004.parse_model_name(name)
    assert (fields and (fields["docset"], fields["annotator"], fields["docid"])) == expected


def test_read_models_groups_by_document(duc):
    stats = duc2004.Stats()
    by_doc = duc2004.read_models(duc[1], stats)
    assert {docid: sorted(annotators) for docid, annotators in by_doc.items()} == {
        "APW19981016.0240": ["A", "B", "C", "D"],
        "APW19981027.0241": ["E", "F", "G"],
        "APW19981101.0843": ["A", "B", "C", "H"],
        "APW19981231.0001": ["A"],
    }
    assert by_doc["APW19981016.0240"]["D"].text == ("Opposition wants talks in Beijing; Hun Sen no")
    assert (stats.model_files, stats.unrecognised_model_files) == (14, 2)


def test_same_annotator_twice(tmp_path):
    same = write_tree(tmp_path / "same", {"D1.P.10.T.A.X1": "text", "d1.p.10.t.a.X1": "text"})
    stats = duc2004.Stats()
    assert list(duc2004.read_models(same, stats)["X1"]) == ["A"]
    assert stats.duplicate_models == 1
    differ = write_tree(tmp_path / "differ", {"D1.P.10.T.A.X1": "one", "D1T.P.10.T.A.X1": "two"})
    with pytest.raises(duc2004.DucDataError, match="both hold annotator A's summary of X1"):
        duc2004.read_models(differ, duc2004.Stats())


def test_build_writes_bin_and_references(duc, tmp_path, absl_caplog):
    caplog = absl_caplog
    out_dir = tmp_path / "out"
    (out_dir / "chunked").mkdir(parents=True)
    (out_dir / "chunked" / "test_001.bin").write_bytes(b"stale")
    stats = duc2004.build(duc[0], duc[1], str(out_dir))
    assert (
        stats.written,
        stats.no_references,
        stats.fewer_references,
        stats.empty_documents,
        stats.models_without_document,
    ) == (3, 1, 1, 0, 1)
    assert "wrote 3 documents" in stats.summary()
    assert "NYT19981002.0309" in caplog.text and "has no reference" in caplog.text
    assert "APW19981027.0241" in caplog.text
    assert "has 3 reference(s), expected 4" in caplog.text
    assert "tokenised 1/4 documents" in caplog.text and "tokenised 4/4 documents" in caplog.text

    records = list(read_bin_file(str(out_dir / "test.bin")))
    assert records == list(read_bin_file(str(out_dir / "chunked" / "test_000.bin")))
    assert sorted(os.listdir(out_dir / "chunked")) == ["test_000.bin"]
    assert records[0] == (
        "cambodian leader hun sen on friday rejected opposition demands for talks abroad . "
        "`` it is detrimental , '' he said . rainsy & ranariddh stayed outside the "
        "country .",
        "<s> hun sen rejects opposition demand for talks abroad </s>",
    )
    assert records[1] == (
        "the cease-fire in kosovo held on tuesday . talks resume monday < officials > .",
        "<s> kosovo truce holds , talks monday </s>",
    )
    assert records[2][1] == "<s> chile protests pinochet arrest in london </s>"

    with open(out_dir / "references.json", encoding="utf-8") as f:
        references = json.load(f)
    assert references == [
        {
            "docid": "APW19981016.0240",
            "references": [
                "hun sen rejects opposition demand for talks abroad",
                "cambodia 's hun sen refuses talks outside country",
                "hun sen : meetings must be held in cambodia",
                "opposition wants talks in beijing ; hun sen no",
            ],
        },
        {
            "docid": "APW19981027.0241",
            "references": [
                "kosovo truce holds , talks monday",
                "kosovo cease-fire holds",
                "cease-fire in kosovo",
            ],
        },
        {
            "docid": "APW19981101.0843",
            "references": [
                "chile protests pinochet arrest in london",
                "pinochet held in london ; chile angry",
                "chilean government protests pinochet arrest",
                "britain arrests pinochet & chile objects",
            ],
        },
    ]


def test_build_refuses_unrelated_folders(tmp_path, duc):
    models = write_tree(tmp_path / "other", {"D1.P.10.T.A.XIE1": "a summary"})
    with pytest.raises(duc2004.DucDataError, match="no document of .* has a usable model"):
        duc2004.build(duc[0], models, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


# Scorer: references as data_prep.duc2004 writes them, decoded files as decode.py does.
REFERENCES = [
    {
        "docid": "APW1",
        "references": [
            "police killed the gunman in the city center",
            "gunman shot dead by police",
            "police kill gunman downtown",
            "city center shooting ends with gunman dead",
        ],
    },
    {
        "docid": "APW2",
        "references": [
            "the cat sat on the mat",
            "a cat was sitting on a mat",
            "cat on mat",
            "the cat rests on the red mat",
        ],
    },
]


def _decode_dir(root, summaries, references=REFERENCES):
    """A decode folder with ``decoded/%06d_decoded.txt``, a references.json next to it."""
    root.mkdir()
    (root / "decoded").mkdir()
    for i, lines in enumerate(summaries):
        (root / "decoded" / ("%06d_decoded.txt" % i)).write_text("\n".join(lines) + "\n")
    path = root / "references.json"
    path.write_text(json.dumps(references))
    return str(root), str(path)


def test_scores_match_rouge_perl_with_all_references(tmp_path):
    decode_dir, refs = _decode_dir(
        tmp_path / "d", [["the gunman was killed by police ."], ["the cat sat .", "on a red mat ."]]
    )
    metrics = duc2004_scoring.score_duc2004(decode_dir, refs)
    direct = rouge.rouge_perl(
        [[[r] for r in entry["references"]] for entry in REFERENCES],
        ["the gunman was killed by police .", "the cat sat . on a red mat ."],
        rouge_args="-b 75",
    )
    for kind in ("rouge_1", "rouge_2", "rouge_l"):
        for end in ("", "_cb", "_ce"):
            assert metrics[kind + "_recall" + end] == direct[kind + "_recall" + end]
    assert 0 < metrics["rouge_2_recall"] < metrics["rouge_1_recall"] < 1
    assert (metrics["num_summaries"], metrics["num_references"]) == (2, 8)
    with open(os.path.join(decode_dir, duc2004_scoring.METRICS_FILE)) as f:
        assert json.load(f) == metrics
    with open(os.path.join(decode_dir, duc2004_scoring.RESULTS_FILE)) as f:
        report = f.read()
    assert (
        "ROUGE-1 recall: %.4f with confidence interval (%.4f, %.4f)"
        % (metrics["rouge_1_recall"], metrics["rouge_1_recall_cb"], metrics["rouge_1_recall_ce"])
        in report
    )
    assert "75 bytes (-b 75), 2 documents, 8 references" in report


def test_count_mismatch_names_both_counts(tmp_path):
    decode_dir, refs = _decode_dir(tmp_path / "d", [["only one summary"]])
    with pytest.raises(
        duc2004_scoring.Duc2004EvalError, match="holds 1 decoded summaries but .* lists 2 documents"
    ):
        duc2004_scoring.score_duc2004(decode_dir, refs)


def test_gap_in_decoded_files(tmp_path):
    decode_dir, refs = _decode_dir(tmp_path / "d", [["a"], ["b"]])
    os.rename(
        os.path.join(decode_dir, "decoded", "000000_decoded.txt"),
        os.path.join(decode_dir, "decoded", "000002_decoded.txt"),
    )
    with pytest.raises(duc2004_scoring.Duc2004EvalError, match="no 000000_decoded.txt"):
        duc2004_scoring.score_duc2004(decode_dir, refs)


def test_bad_references_file(tmp_path):
    decode_dir, refs = _decode_dir(tmp_path / "d", [["a"]], [{"docid": "X", "references": []}])
    with pytest.raises(duc2004_scoring.Duc2004EvalError, match="entry 0 is not"):
        duc2004_scoring.score_duc2004(decode_dir, refs)


def test_long_summary_scores_as_its_first_75_bytes(tmp_path):
    long = (
        "police said on monday that officers from three units had killed a gunman "
        "after a standoff in the city center"
    )
    prefix = long.encode("utf-8")[:75].decode("utf-8")
    assert len(long.encode("utf-8")) > 75 and len(prefix.encode("utf-8")) == 75
    references = REFERENCES[:1]
    full = duc2004_scoring.score_duc2004(*_decode_dir(tmp_path / "full", [[long]], references))
    cut = duc2004_scoring.score_duc2004(*_decode_dir(tmp_path / "cut", [[prefix]], references))
    for kind in ("rouge_1", "rouge_2", "rouge_l"):
        assert full[kind + "_recall"] == cut[kind + "_recall"], kind
    untruncated = rouge.rouge_perl([[[r] for r in references[0]["references"]]], [long])
    assert untruncated["rouge_1_recall"] > full["rouge_1_recall"]  # the tail would count


def test_latin1_files_are_read(tmp_path):
    path = tmp_path / "doc"
    path.write_bytes(b"<DOC><DOCNO>A</DOCNO><TEXT>Caf\xe9 Zurich.</TEXT></DOC>")
    text = duc2004.read_text(str(path))
    assert duc2004.parse_documents(text, str(path), "d1t")[0].text == "Caf\u00e9 Zurich."
