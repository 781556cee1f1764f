"""guard.wire.hold: what the Responses and Messages stream guards keep back."""

from guard.wire.hold import Hold


def test_an_item_goes_out_at_once_when_nothing_is_held():
    hold = Hold[str]()
    assert not hold.keep("event")
    assert not hold.holding
    assert hold.end() == []


def test_what_comes_while_holding_is_given_back_in_order_and_the_hold_ends():
    hold = Hold[str]()
    hold.begin()
    for item in ("added", "part", "ping"):
        assert hold.keep(item)
    assert hold.end() == ["added", "part", "ping"]
    assert not hold.holding
    assert not hold.keep("delta")


def test_beginning_again_while_holding_keeps_what_is_held():
    hold = Hold[str]()
    hold.begin()
    hold.keep("first item")
    hold.begin()  # a second message item announced before the first showed text
    hold.keep("second item")
    assert hold.end() == ["first item", "second item"]
