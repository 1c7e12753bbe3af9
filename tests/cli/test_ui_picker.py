"""``tether.cli.ui.picker``'s pure part: which items a query keeps and which rows show.

The list itself (keys, drawing) is driven in a real terminal by ``test_chat_tmux.py``
(``/model``, ``/resume`` and ``-r`` without an argument)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.cli.ui.picker import PickItem, filter_items, picker_rows
from tether.cli.ui.text import cell_width

ITEMS = [
    PickItem(value="a", label="openai/gpt-test", detail="current"),
    PickItem(value="b", label="openai/gpt-big", detail="openai's server"),
    PickItem(value="c", label="anthropic/", detail="provider"),
]

items = st.lists(
    st.builds(
        PickItem,
        value=st.text(max_size=5),
        label=st.text(max_size=30),
        detail=st.text(max_size=30),
    ),
    max_size=30,
)


def test_every_word_must_match_label_or_detail_in_any_case() -> None:
    assert filter_items(ITEMS, "") == ITEMS
    assert [item.value for item in filter_items(ITEMS, "GPT")] == ["a", "b"]
    assert [item.value for item in filter_items(ITEMS, "gpt server")] == ["b"]
    assert filter_items(ITEMS, "gpt provider") == []


@given(items, st.text(max_size=10))
def test_the_filter_keeps_matching_items_in_order(listed: list[PickItem], query: str) -> None:
    kept = filter_items(listed, query)
    assert kept == [item for item in listed if item in kept]  # a subsequence, in order
    words = query.casefold().split()
    for item in listed:
        text = f"{item.label} {item.detail}".casefold()
        assert (item in kept) == all(word in text for word in words)


@given(items, st.integers(min_value=0, max_value=40), st.integers(1, 12), st.integers(1, 80))
def test_the_rows_show_the_selected_item_and_fit(
    listed: list[PickItem], selected: int, rows: int, width: int
) -> None:
    selected = min(selected, max(len(listed) - 1, 0))
    shown = picker_rows(listed, selected, rows=rows, width=width)
    assert len(shown) == min(rows, len(listed))
    if listed:
        assert [chosen for chosen, _, _ in shown].count(True) == 1
    for _, label, detail in shown:
        assert cell_width(label) <= width
        assert "\x1b" not in label + detail
        if detail:
            assert cell_width(label) + 2 + cell_width(detail) <= width
