"""A lazy pattern answers as the compiled one, and compiles only when first used."""

from __future__ import annotations

import re

from vmemplan.core.patterns import lazy


def test_lazy_pattern_answers_as_re_compile() -> None:
    text = "layers.12.mlp and layers.3.attn"
    p, q = lazy(r"layers\.(\d+)\."), re.compile(r"layers\.(\d+)\.")
    assert p._compiled is None
    assert p.search(text).group(1) == q.search(text).group(1) == "12"
    assert p._compiled is q  # re's own cache
    assert p.findall(text) == q.findall(text) == ["12", "3"]
    assert [m.span() for m in p.finditer(text)] == [m.span() for m in q.finditer(text)]
    assert p.sub("L.", text) == q.sub("L.", text)
    assert p.subn("L.", text, 1) == q.subn("L.", text, 1)
    assert p.split(text) == q.split(text)
    assert p.match(text) and p.fullmatch("layers.1.") and not p.fullmatch(text)
    ci = lazy("ABC", re.I)
    assert ci.match("abc") and ci.flags == re.I
