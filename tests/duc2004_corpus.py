"""A DUC 2004 task-1 release in miniature (documents and model summaries, with the
files a real release holds that are not task-1 summaries), as tests/test_duc2004.py and
test_doc_summarizer.py write it."""

# Three document sets laid out as in NIST's docs/ folder: a folder per set, a file per
# document named by its DOCNO. Markup, entities and several sentences in the TEXT.
DOCUMENTS = {
    "d30001t/APW19981016.0240": """<DOC>
<DOCNO> APW19981016.0240 </DOCNO>
<DOCTYPE> NEWS </DOCTYPE>
<TXTTYPE> NEWSWIRE </TXTTYPE>
<TEXT>
Cambodian leader Hun Sen on Friday rejected opposition demands
for talks abroad. ``It is detrimental,'' he said. Rainsy &AMP; Ranariddh
stayed outside the country.
</TEXT>
</DOC>
""",
    "d30001t/NYT19981002.0309": """<DOC>
<DOCNO>NYT19981002.0309</DOCNO>
<TEXT>
<P>
Hurricane Georges &MD; the storm of the year &MD; hit Key West.
</P>
</TEXT>
</DOC>
""",
    "d30002t/APW19981027.0241": """<DOC>
<DOCNO> APW19981027.0241 </DOCNO>
<TEXT>
<P>The cease-fire in Kosovo held on Tuesday.</P>
<P>Talks resume Monday &lt;officials&gt;.</P>
</TEXT>
</DOC>
""",
    "d30003t/APW19981101.0843": """<DOC>
<DOCNO> APW19981101.0843 </DOCNO>
<TEXT>
Pinochet's arrest in London angered Chile. Its government protested.
</TEXT>
</DOC>
""",
}

# The task-1 models folder (eval/models/1): one summary per file, named
# <set>.P.10.T.<annotator>.<DOCNO>. NYT19981002.0309 has none, APW19981027.0241 three.
MODELS = {
    "D30001.P.10.T.A.APW19981016.0240": "Hun Sen rejects opposition demand for talks abroad",
    "D30001.P.10.T.B.APW19981016.0240": "Cambodia's Hun Sen refuses talks outside country",
    "D30001.P.10.T.C.APW19981016.0240": "Hun Sen: meetings must be held in Cambodia",
    "D30001.P.10.T.D.APW19981016.0240": "Opposition wants talks in Beijing;\nHun Sen no",
    "D30002.P.10.T.F.APW19981027.0241": "Kosovo cease-fire holds",
    "D30002.P.10.T.E.APW19981027.0241": "Kosovo truce holds, talks Monday",
    "D30002.P.10.T.G.APW19981027.0241": "Cease-fire in Kosovo",
    "D30003.P.10.T.A.APW19981101.0843": "Chile protests Pinochet arrest in London",
    "D30003.P.10.T.B.APW19981101.0843": "Pinochet held in London; Chile angry",
    "D30003.P.10.T.C.APW19981101.0843": "Chilean government protests Pinochet arrest",
    "D30003.P.10.T.H.APW19981101.0843": "Britain arrests Pinochet &AMP; Chile objects",
    "D30099.P.10.T.A.APW19981231.0001": "A summary of a document that is not there",
    "D30001.M.100.T.A": "A task-2 multi-document summary.",
    "README": "not a summary",
}


def write_tree(root, files):
    """Writes ``files`` (relative path -> text) under ``root``; returns its path."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(root)
