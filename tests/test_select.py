import pytest

from conformance.run import SelectError, compile_expression

IDS = ["gru/basic[direction=forward]", "gru/basic[direction=reverse]", "lstm/peepholes[direction=reverse]"]


@pytest.mark.parametrize("expr, expected", [
    ("", IDS),
    ("gru", IDS[:2]),
    ("reverse and not lstm", [IDS[1]]),
    ("lstm or direction=forward", [IDS[0], IDS[2]]),
    ("(gru and reverse) or peepholes", IDS[1:]),
    ("gru/basic[direction=reverse]", [IDS[1]]),
])
def test_expressions(expr, expected):
    pred = compile_expression(expr)
    assert [i for i in IDS if pred(i)] == expected


@pytest.mark.parametrize("expr", ["gru and", "(gru", "or gru", "gru )"])
def test_bad_expressions_raise(expr):
    with pytest.raises(SelectError):
        compile_expression(expr)
