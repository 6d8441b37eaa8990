"""Per-statement results of the analyses: CFG, activity, reaching definitions, liveness."""
import textwrap

import gast

from transpile import anno, liveness
from transpile.liveness import activity, cfg, reaching_definitions


def _analyzed(src: str):
    fn = gast.parse(textwrap.dedent(src)).body[0]
    liveness.analyze(fn)
    return fn


def _at(fn, line: int, kind=gast.stmt):
    for n in gast.walk(fn):
        if isinstance(n, kind) and getattr(n, "lineno", None) == line:
            return n
    raise LookupError(line)


def _names(values) -> set:
    return {str(q) for q in values}


LOOP = """
def f(x, n):
    i = 0
    s = 0.0
    while i < n:
        t = x[i] * 2
        s = s + t
        if s > 10:
            y = s
            break
        i += 1
    else:
        y = 0
    return y + s
"""


def test_activity_per_statement():
    fn = _analyzed(LOOP)
    loop = _at(fn, 5)
    scope = anno.get_anno(loop, anno.SCOPE)
    assert _names(scope.modified) == {"i", "s", "t", "y"}
    assert _names(scope.read) >= {"i", "n", "s", "t", "x", "x[i]"}
    assert _names(anno.get_anno(loop, anno.BODY_SCOPE).modified) == {"i", "s", "t", "y"}
    assert _names(anno.get_anno(loop, anno.ORELSE_SCOPE).modified) == {"y"}
    assert _names(anno.get_anno(_at(fn, 8), anno.SCOPE).modified) == {"y"}


def test_activity_composite_names():
    fn = _analyzed("""
    def f(self, a, i, v):
        self.x.y = v
        a[i] = v
        z = self.w + a[0]
    """)
    assign_attr = anno.get_anno(_at(fn, 3), anno.SCOPE)
    assert _names(assign_attr.modified) == {"self.x.y"}
    assert _names(assign_attr.read) == {"self", "self.x", "v"}
    assign_item = anno.get_anno(_at(fn, 4), anno.SCOPE)
    assert _names(assign_item.modified) == {"a"}
    assert {"a", "i", "v"} <= _names(assign_item.read)
    assert _names(anno.get_anno(_at(fn, 5), anno.SCOPE).read) == {"self", "self.w", "a", "a[0]"}


def test_activity_closures_comprehensions_and_nonlocal():
    fn = _analyzed("""
    def f(x, ys):
        total = 0
        k = 2
        def add(v):
            nonlocal total
            total += v * k
        g = lambda q: q + x
        zs = [y * k for y in ys if y > 0]
        add(1)
        return total, g, zs
    """)
    scope = anno.get_anno(fn, activity.FUNCTION_SCOPE)
    assert scope.cell_vars == {"total", "k", "x"}
    assert _names(anno.get_anno(_at(fn, 5), anno.SCOPE).read) >= {"k", "total"}  # the def reads its closure
    assert _names(anno.get_anno(_at(fn, 8), anno.SCOPE).read) >= {"x"}
    comp = anno.get_anno(_at(fn, 9), anno.SCOPE)
    assert "y" not in _names(comp.read) | _names(comp.modified) and {"ys", "k"} <= _names(comp.read)
    call = anno.get_anno(_at(fn, 10), anno.SCOPE)
    assert "total" in _names(call.modified)  # calling `add` writes `total` through nonlocal


def test_cfg_edges():
    fn = gast.parse(textwrap.dedent(LOOP)).body[0]
    graph = cfg.build(fn)
    text = cfg.dump(graph)
    assert "<While@5> -> <Assign@6>, <Assign@13>" in text
    assert "<Break@10> -> <Return@14>" in text      # break skips the else block
    assert "<AugAssign@11> -> <While@5>" in text    # back edge
    assert "<Return@14> -> <exit>" in text


def test_cfg_for_loop_target_is_assigned_only_when_iterating():
    fn = gast.parse(textwrap.dedent("""
    def f(xs):
        for v in xs:
            continue
        return v
    """)).body[0]
    text = cfg.dump(cfg.build(fn))
    assert "<For@3> -> <Name@3>, <Return@5>" in text
    assert "<Continue@4> -> <For@3>" in text


def test_reaching_definitions_per_statement():
    fn = _analyzed("""
    def f(x, c):
        if c:
            y = 1
        z = 2
        for i in range(3):
            w = i
        return x
    """)
    defined = {line: _names(anno.get_anno(_at(fn, line), anno.DEFINED_IN)) for line in (3, 4, 5, 6, 7, 8)}
    assert defined[3] == {"x", "c"}
    assert defined[5] == {"x", "c"}                  # y is assigned on one path only
    assert defined[6] == {"x", "c", "z"}
    assert defined[7] == {"x", "c", "z", "i"}
    assert defined[8] == {"x", "c", "z"}             # the loop may run zero times
    maybe = _names(anno.get_anno(_at(fn, 5), anno.MAYBE_DEFINED_IN))
    assert "y" in maybe
    assert _names(anno.get_anno(_at(fn, 6), anno.MAYBE_DEFINED_BEFORE)) == {"x", "c", "y", "z"}
    assert "w" in _names(anno.get_anno(_at(fn, 8), anno.MAYBE_DEFINED_IN))
    text = reaching_definitions.dump(fn)
    assert "5: Assign defined={c, x}" in text


def test_liveness_per_statement():
    fn = _analyzed(LOOP)
    live = {line: (_names(anno.get_anno(_at(fn, line), anno.LIVE_IN)),
                   _names(anno.get_anno(_at(fn, line), anno.LIVE_OUT))) for line in (3, 5, 6, 7, 8, 11, 14)}
    assert live[3] == ({"n", "x"}, {"i", "n", "x", "x[i]"})  # writing i ends the life of x[i]
    assert live[5] == ({"i", "n", "s", "x", "x[i]"}, {"s", "y"})   # after the loop: s and y
    assert live[6] == ({"i", "n", "s", "x", "x[i]"}, {"i", "n", "s", "t", "x"})
    assert live[7][1] == {"i", "n", "s", "x"}             # t dies: a body temporary
    assert live[8] == ({"i", "n", "s", "x"}, {"i", "n", "s", "x", "y"})
    assert live[11] == ({"i", "n", "s", "x"}, {"i", "n", "s", "x", "x[i]"})
    assert live[14] == ({"s", "y"}, set())
    assert "14: Return in={s, y} out={}" in liveness.liveness.dump(fn)


def test_loop_state_is_modified_and_live():
    """modified ∩ (live-in ∪ live-out): the state the loop converter carries."""
    fn = _analyzed(LOOP)
    loop = _at(fn, 5)
    modified = anno.get_anno(loop, anno.BODY_SCOPE).modified
    live = anno.get_anno(loop, anno.LIVE_IN) | anno.get_anno(loop, anno.LIVE_OUT)
    assert _names(modified & live) == {"i", "s", "y"}


def test_liveness_of_composite_names():
    fn = _analyzed("""
    def f(self, v):
        self.a = v
        self.a = self.a + 1
        return self.b
    """)
    assert "self.a" not in _names(anno.get_anno(_at(fn, 3), anno.LIVE_IN))
    assert "self.a" in _names(anno.get_anno(_at(fn, 4), anno.LIVE_IN))
    assert _names(anno.get_anno(_at(fn, 5), anno.LIVE_IN)) == {"self", "self.b"}


def test_activity_dump():
    fn = _analyzed(LOOP)
    text = activity.dump(fn)
    assert "6: Assign read={i, x, x[i]} modified={t}" in text
