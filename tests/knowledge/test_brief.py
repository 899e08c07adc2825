"""The brief's fitting rules without records: the token estimate, shortening at a word,
a note's reason, relative paths, and the fit (whole items, priority, each item once)."""

from __future__ import annotations

from knowledge.services.brief import Item, fit, reason_of, relative, shorten, tokens


def item(ref: str, text: str) -> Item:
    return Item(ref=ref, line=f"- {text}", data={})


def test_the_estimate_is_four_characters_a_token_rounded_up():
    assert [tokens(""), tokens("abcd"), tokens("abcde")] == [0, 1, 2]


def test_shorten_cuts_between_words_and_says_so():
    assert shorten("one two three", 20) == "one two three"
    assert shorten("alpha beta gamma delta", 14) == "alpha beta…"
    assert shorten("  many\n lines\tflattened ", 40) == "many lines flattened"


def test_a_reason_is_the_first_paragraph_after_the_headings():
    body = "# Use CSV\n\n```yaml\nx: 1\n```\nBecause finance reads it.\nNo plugin needed.\n\nLater."
    assert reason_of(body) == "Because finance reads it. No plugin needed."
    assert reason_of("# Only a heading\n") == ""


def test_paths_are_relative_to_the_project():
    assert relative("docs/a.md", "app") == "docs/a.md"
    assert relative("./src/x.py", "app") == "src/x.py"
    assert relative("/home/bob/src/app/docs/a.md", "app") == "docs/a.md"
    assert relative("C:\\work\\app\\src\\x.py", "app") == "src/x.py"
    assert relative("/srv/checkout/src/x.py", "app") == "src/x.py"
    assert relative("/home/me/src/billing/billing/vat.py", "billing") == "billing/vat.py"


def test_the_fit_takes_whole_items_by_priority_within_the_budget():
    first = [item(f"a:{n}", f"first section item number {n}") for n in range(5)]
    second = [item(f"b:{n}", f"second section item number {n}") for n in range(5)]
    # (records told apart by ref: alike words never make two tasks one)
    sections = [("a", "## A", first), ("b", "## B", second)]
    for budget in range(10, 200, 7):
        fitted = fit(head=["# T"], sections=sections, budget=budget, first={"a": 2, "b": 1})
        markdown = "\n".join(fitted.lines) + "\n"
        assert tokens(markdown) <= budget
        assert set(fitted.lines) <= {"# T", "", "## A", "## B", *(i.line for i in first + second)}
        if fitted.chosen["b"]:  # the first round gives a its two before b gets one
            assert len(fitted.chosen["a"]) >= 2
        assert fitted.truncated == (len(fitted.chosen["a"]) + len(fitted.chosen["b"]) < 10)


def test_the_fit_shows_each_record_and_each_text_once():
    sections = [
        ("a", "## A", [item("entity:x", "Use CSV because finance reads it easily")]),
        (
            "b",
            "## B",
            [
                item("entity:x", "the same record again"),
                item("memory:1", "use csv because finance reads it easily"),
                item("memory:2", "Tea is served at four"),
                item("task:3", "Use CSV because finance reads it easily"),
            ],
        ),
    ]
    fitted = fit(head=["# T"], sections=sections, budget=1000, first={})
    assert [i.ref for i in fitted.chosen["a"]] == ["entity:x"]
    assert [i.ref for i in fitted.chosen["b"]] == ["memory:2", "task:3"]
    assert not fitted.truncated  # a repeat is not a cut
