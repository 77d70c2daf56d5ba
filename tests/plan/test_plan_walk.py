"""The walk's enumerator (plan.groups.cheapest_combinations): combinations in non-decreasing
total price, and options the caller declares dead while it walks are left out, exactly: every
combination of live options still comes, in the same order as without the dead ones. Two lists
walked as one list of their allowed pairs (a Joint) give the same order, less the pairs not
allowed or declared dead."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from dlrig.plan.groups import Joint, cheapest_combinations

# Whole-dollar prices: sums are exact, so the expected order (total, then index) is exact too.
price_lists = st.lists(
    st.lists(st.integers(0, 50), min_size=1, max_size=5).map(sorted), min_size=1, max_size=4
)


def by_price(lists: list[list[int]]) -> list[tuple[int, ...]]:
    """Every combination, cheapest first (ties: by index, as the walk's heap orders them)."""
    return sorted(
        itertools.product(*(range(len(p)) for p in lists)),
        key=lambda ix: (sum(p[i] for p, i in zip(lists, ix, strict=True)), ix),
    )


@settings(max_examples=200)
@given(lists=price_lists, data=st.data())
def test_dead_options_are_skipped_and_the_rest_keep_their_order(
    lists: list[list[int]], data: st.DataObject
) -> None:
    # After the n-th combination, the caller may declare (list, option) pairs dead.
    deaths = data.draw(
        st.dictionaries(
            st.integers(0, 30),
            st.lists(
                st.integers(0, len(lists) - 1).flatmap(
                    lambda a: st.tuples(st.just(a), st.integers(0, len(lists[a]) - 1))
                ),
                max_size=2,
            ),
            max_size=4,
        )
    )
    dead: list[set[int]] = [set() for _ in lists]
    got = []
    for total, index in cheapest_combinations([[float(x) for x in p] for p in lists], dead):
        assert total == sum(p[i] for p, i in zip(lists, index, strict=True))
        got.append(index)
        for axis, option in deaths.get(len(got), []):
            dead[axis].add(option)

    expected = []
    gone: list[set[int]] = [set() for _ in lists]
    for index in by_price(lists):
        if any(i in g for i, g in zip(index, gone, strict=True)):
            continue
        expected.append(index)
        for axis, option in deaths.get(len(expected), []):
            gone[axis].add(option)
    assert got == expected


def test_without_dead_options_every_combination_comes_cheapest_first() -> None:
    lists = [[1.0, 2.0, 5.0], [0.0, 3.0], [2.0, 2.0, 4.0]]
    got = [index for _, index in cheapest_combinations(lists)]
    assert got == by_price([[int(x) for x in p] for p in lists])
    assert len(got) == 3 * 2 * 3


@settings(max_examples=200)
@given(lists=price_lists.filter(lambda ls: len(ls) >= 3), data=st.data())
def test_joint_lists_walk_their_allowed_pairs_and_skip_dead_pairs(
    lists: list[list[int]], data: st.DataObject
) -> None:
    # Lists 0 and 2 go together only in allowed pairs, and the caller may declare pairs dead
    # as it walks: every other combination comes, in the order of the plain walk.
    allowed = {
        (i, j)
        for i in range(len(lists[0]))
        for j in range(len(lists[2]))
        if data.draw(st.booleans())
    }
    pairs = sorted(allowed, key=lambda ij: (lists[0][ij[0]] + lists[2][ij[1]], ij))
    deaths = data.draw(
        st.dictionaries(
            st.integers(0, 30),
            st.lists(
                st.tuples(st.integers(0, len(lists[0]) - 1), st.integers(0, len(lists[2]) - 1)),
                max_size=2,
            ),
            max_size=4,
        )
    )
    dead_pairs: set[tuple[int, int]] = set()
    joint = Joint(0, 2, pairs, dead_pairs)
    got = []
    prices = [[float(x) for x in p] for p in lists]
    for total, index in cheapest_combinations(prices, None, [joint]):
        assert total == sum(p[i] for p, i in zip(lists, index, strict=True))
        got.append(index)
        dead_pairs.update(deaths.get(len(got), []))

    expected = []
    gone: set[tuple[int, int]] = set()
    for index in by_price(lists):
        pair = (index[0], index[2])
        if pair not in allowed or pair in gone:
            continue
        expected.append(index)
        gone.update(deaths.get(len(expected), []))
    assert got == expected
