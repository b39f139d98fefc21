"""The deliberation view model's small parts: what a ballot offers, the round's label."""

from __future__ import annotations

from wopdsl.projections.deliberation import DecisionView, RoundView, choices_of


def _decision(**fields: object) -> DecisionView:
    base: dict[str, object] = dict(id="d", room="r", question="?", open=True, voters=("a",),
                                   voted=0, choices=None, scale=None, tally=None)
    return DecisionView(**{**base, **fields})  # type: ignore[arg-type]


def test_a_ballot_lists_options_and_small_scales_whole() -> None:
    assert choices_of(_decision(choices=("ship", "hold"))) == ("ship", "hold")
    assert choices_of(_decision(scale=(1, 10))) == tuple(str(n) for n in range(1, 11))
    assert len(choices_of(_decision(scale=(0, 100)))) == 101


def test_a_wide_scale_offers_its_ends_and_middle_only() -> None:
    # A scale of a billion scores is never listed (nor allocated) by a view.
    assert choices_of(_decision(scale=(0, 10**9))) == ("0", "500000000", "1000000000")
    assert choices_of(_decision(scale=(-5, 200))) == ("-5", "97", "200")


def test_round_labels() -> None:
    going = RoundView("r", 1, 2, True, False, False, ("a", "b", "c"), ("c",))
    assert going.label() == "round 1 of 2 · blind · 2 of 3 answered" and going.hiding
    over = RoundView("r", 2, 2, True, True, True, (), ())
    assert over.label() == "2 of 2 rounds held · blind · anonymous · the debate is over"
    assert not over.hiding
    assert RoundView("r", 0, 1, False, False, False, (), ()).label() == "1 round · not begun"
