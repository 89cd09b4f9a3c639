"""The exclusion-list shortcut (laws/quant.py::_layer_free) never changes a count.

``QuantScheme.unquantized_units`` evaluates a generic ignore pattern once for all layers when the
pattern cannot tell one layer number from another; here random patterns (digits, globs, regex
dots and classes included) are checked against the unit-by-unit count it replaces.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.core.graph import WeightTensor
from vmemplan.laws.quant import Fp8Scheme, _layer_free

ATOMS = ["model", "layers", "mlp", "self_attn", "experts", "gate_proj", ".", "*", "?", "1", "2", "0",
         "[0-3]", "_proj", "q", "k", "v"]
RE_ATOMS = ["model", r"\.", "layers", ".*", ".", r"\d", r"\d+", "mlp", "self_attn", "(", ")", "|", "1",
            "[0-9]", "{2}", "+", "experts", "gate", "up", "proj", "_", "^", "$"]


def _brute(scheme: Fp8Scheme, t: WeightTensor) -> int:
    from vmemplan.laws.quant import _LAYER_RE

    generic = [p for p in scheme.excluded if not _LAYER_RE.search(p)]
    specific: dict[int, list[str]] = {}
    for p in scheme.excluded:
        m = _LAYER_RE.search(p)
        if m:
            specific.setdefault(int(m.group(1)), []).append(p)
    return sum(1 for i in range(t.num_allocations)
               if (pats := generic + specific.get(i, []))
               and scheme._module_skipped(t.name, i, pats, scheme.match_mode))


globs = st.lists(st.sampled_from(ATOMS), min_size=1, max_size=7).map("".join)
regexes = st.lists(st.sampled_from(RE_ATOMS), min_size=1, max_size=8).map(lambda a: "re:" + "".join(a))
specific = st.integers(0, 40).map(lambda i: f"model.layers.{i}.mlp.gate_proj")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pats=st.lists(st.one_of(globs, regexes, specific), min_size=1, max_size=4),
       mode=st.sampled_from(["pattern", "exact", "substring"]),
       name=st.sampled_from(["mlp.gate_up_proj", "self_attn.qkv_proj", "mlp.experts.w13_weight", "mlp.down_proj"]))
def test_shortcut_equals_unit_by_unit(pats, mode, name):
    import re

    try:
        for p in pats:
            if p.startswith("re:"):
                re.compile(p[3:])
    except re.error:
        return
    scheme = Fp8Scheme(name="fp8", excluded=tuple(pats), match_mode=mode)
    t = WeightTensor(name, "linear", 64, 64, 33, True)
    try:
        brute = _brute(scheme, t)
    except Exception:  # a pattern vmemplan refuses (catastrophic regex) is refused either way
        return
    assert scheme.unquantized_units(t) == brute


def test_layer_free_by_hand():
    assert _layer_free("model.layers.*.mlp.router", "pattern")
    assert _layer_free("re:.*self_attn.*", "pattern")
    assert _layer_free(r"re:model\.layers\..*\.mlp", "pattern")
    assert not _layer_free("model.layers.1*.mlp", "pattern")  # a digit
    assert not _layer_free("model.layers.?.mlp", "pattern")  # one character: one-digit layers only
    assert not _layer_free(r"re:model\.layers\.\d\.mlp", "pattern")  # a class
    assert not _layer_free(r"re:model\.layers\..\.mlp", "pattern")  # a dot that is not .*
    assert not _layer_free(r"re:model\.layers\..+.+\.mlp", "pattern")  # two or more digits only
    assert _layer_free("mlp.gate", "substring") and not _layer_free("layers.1", "substring")
