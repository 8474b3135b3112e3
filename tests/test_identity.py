"""The identity step's assignment rules on small, exact cases (the CLI cases are in
test_state.py): strongest claim wins an earlier item, the older id survives, an id is
never given to a second resource."""

from __future__ import annotations

from ingest.records import Facts
from ingest.resolve.graph import mint
from ingest.resolve.identity import EXACT, SIMILAR, Claim, IdIndex, assign


def facts(*keys: str, titles: tuple[str, ...] = ()) -> Facts:
    return Facts(keys, titles, None, "博客", (), keys[0], None, "x")


def index(items: dict[str, tuple[Facts, int]]) -> IdIndex:
    idx = IdIndex()
    for item_id, (f, since) in items.items():
        idx.facts[item_id], idx.since[item_id] = f, since
        for k in f.keys:
            idx.by_key.setdefault(k, []).append(item_id)
    return idx


def test_a_minted_id_an_earlier_item_holds_is_never_given_to_another_resource() -> None:
    """Day 3 of a reworded item: its old summary S1 (whose digest is its id) now belongs to
    another resource, which mints that very id; the item keeps it, the newcomer gets a
    salted one."""
    # Reworded keys such that the item's minted id sorts first: it wins the tie, so the
    # newcomer's own minted id is the one already taken.
    s1, s2 = next((f"s1-{n}", "s2") for n in range(100) if mint("s2") < mint(f"s1-{n}"))
    kept = mint(s1)
    idx = index({kept: (facts(s2, s1), 1)})
    item = Claim(mint(s2), facts(s2), ((kept, EXACT, 100.0),))
    newcomer = Claim(mint(s1), facts(s1), ((kept, EXACT, 100.0),))
    ids = assign([item, newcomer], idx, sequence=3)
    assert ids.final == {item.minted: kept, newcomer.minted: mint(s1, 1)}
    assert ids.merged == {}


def test_the_strongest_claim_wins_and_the_oldest_id_survives() -> None:
    old, young = "aaaa00000000", "0000bbbbbbbb"  # the younger id sorts first
    idx = index({old: (facts("k1"), 1), young: (facts("k2"), 4)})
    both = Claim("m-both", facts("k1", "k2"), ((old, EXACT, 100.0), (young, EXACT, 100.0)))
    weak = Claim("m-weak", facts("k3"), ((young, SIMILAR, 90.0),))
    ids = assign([weak, both], idx, sequence=5)
    assert ids.final == {"m-both": old, "m-weak": "m-weak"}
    assert ids.merged == {young: old}
    evidence = {e.id: e for e in ids.evidence}
    assert evidence[old].since == 1 and evidence[old].keys == ["k1", "k2"]
    assert evidence["m-weak"].since == 5
    assert [d.kind for d in ids.decisions] == []  # exact evidence needs no explanation
