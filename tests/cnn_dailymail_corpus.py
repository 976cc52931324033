"""A CNN/DailyMail download in miniature, as tests/test_cnn_dailymail.py and
test_doc_summarizer.py build it: story folders named by the URLs' SHA-1 and the three
URL lists (an unlisted story and a listed URL without one among them)."""

import hashlib

from data_prep import cnn_dailymail as cd

SENATE_URL = "http://www.cnn.com/2013/06/04/politics/senate-vote/index.html"
HEALTH_URL = "http://www.cnn.com/2013/06/05/health/heart-study/index.html"
STORM_URL = "http://www.cnn.com/2013/06/06/us/storm/index.html"
UNLISTED_URL = "http://www.cnn.com/2013/06/07/us/unlisted/index.html"
WEDDING_URL = "http://www.dailymail.co.uk/news/article-1001/Wedding-dress.html"
FOOTBALL_URL = "http://www.dailymail.co.uk/sport/article-1002/Rooney-double.html"
CAFE_URL = "http://www.dailymail.co.uk/news/article-1003/Cafe-opens.html"
MISSING_URL = "http://www.dailymail.co.uk/news/article-1004/No-story.html"

URL_LISTS = {
    "train": [WEDDING_URL, SENATE_URL, FOOTBALL_URL],
    "val": [HEALTH_URL, MISSING_URL],
    "test": [CAFE_URL, STORM_URL],
}

STORIES = {
    SENATE_URL: (
        "WASHINGTON (CNN) -- The U.S. Senate passed the bill on Tuesday, officials said.\n"
        "\n"
        '"We can\'t wait," Sen. John Smith, R-Ariz., told reporters.\n'
        "\n"
        "Image caption: Senators leave the chamber\n"
        "\n"
        'The vote was 61-37 -- a "historic" moment\n'
        "\n"
        "@highlight\n"
        "\n"
        "Senate passes the bill 61-37\n"
        "\n"
        "@highlight\n"
        "\n"
        '"We can\'t wait," says Sen. John Smith\n'
    ),
    WEDDING_URL: (
        "By . Daily Mail Reporter . PUBLISHED: . 12:30 EST, 5 June 2013 .\n"
        "Mary Jones said: \u2018It\u2019s the \u201cbest\u201d day ever\u2019\n"
        "The bride (pictured) paid \u00a31,200 for the dress [right]!\n"
        "   \n"
        "'I was absolutely devastated,' she told friends... 'Why me?'\n"
        "@highlight\n"
        "Jones, 23, paid \u00a31,200 for a dress\n"
        "@highlight\n"
        "She says it was \u2018worth it\u2019\n"
    ),
    FOOTBALL_URL: (
        "Manchester United's Wayne Rooney scored twice on Saturday.\n"
        "Rooney (left) celebrates with team-mates\n"
        "@highlight\n"
        "United win 2-0\n"
    ),
    HEALTH_URL: (
        "NEW YORK (CNN) -- A new study found a 25% drop in heart attacks, researchers "
        "said Monday.\n"
        '"These results are very encouraging," said Dr. Robert Kim. "But more work is '
        'needed."\n'
        "@highlight\n"
        "Study finds 25% drop in heart attacks\n"
    ),
    STORM_URL: (
        "MIAMI, Florida (CNN) -- At 5 p.m. ET, the storm was 100 miles (160 kilometers) "
        "southeast of Miami, Fla.\n"
        "The storm was expected to make landfall Monday night.\n"
        "@highlight\n"
        "Storm is 100 miles from Miami\n"
        "@highlight\n"
        "Landfall expected Monday night\n"
    ),
    CAFE_URL: (
        # "Jose\u0301" is José with a combining acute accent (decomposed Unicode).
        "Jose\u0301 Marti\u0301nez opened the cafe in 2010.\n"
        "It's the town's only cafe -- and it's always full\n"
        "@highlight\n"
        "Cafe opened in 2010"
    ),
    UNLISTED_URL: "This story is in no URL list.\n@highlight\nUnlisted\n",
}
CNN_URLS = (SENATE_URL, HEALTH_URL, STORM_URL, UNLISTED_URL)
DM_URLS = (WEDDING_URL, FOOTBALL_URL, CAFE_URL)


def story_name(url):
    """A story's file name without ``.story``: the SHA-1 of its URL in hex."""
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def write_text(path, text):
    """Writes ``text`` to ``path`` (a ``pathlib.Path``), making its folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_corpus(root):
    """Writes the story folders and URL lists under ``root``; returns their paths."""
    for urls, folder in ((CNN_URLS, "cnn/stories"), (DM_URLS, "dailymail/stories")):
        for url in urls:
            write_text(root / folder / (story_name(url) + ".story"), STORIES[url])
    for split, urls in URL_LISTS.items():
        write_text(root / "url_lists" / cd.URL_LIST_NAMES[split], "\n".join(urls) + "\n")
    return {
        "cnn_stories_dir": str(root / "cnn/stories"),
        "dm_stories_dir": str(root / "dailymail/stories"),
        "url_lists_dir": str(root / "url_lists"),
    }
