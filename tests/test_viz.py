"""pb.viz without a browser or Graphviz: make_dot's DOT parsed structurally (every
statement well formed, braces balanced, every edge between declared nodes, one
cluster per compiled region, labels as expected), rendering through a stand-in
``dot`` program and the message when there is none; compiled_html parsed with
html.parser (tags balanced, every link landing on an id, every backward block linked
to the forward block of the same line of code)."""

from __future__ import annotations

import os
import re
import stat
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

import pullback as pb
from pullback import nn

_STATEMENT = re.compile(
    r'^(?:(?P<open>(?:digraph|subgraph \w+) \{)'
    r'|(?P<close>\})'
    r'|(?P<attrs>(?:graph|node) \[.*\])'
    r'|(?P<set>(?:label|style)=.*)'
    r'|(?P<node>(?P<id>n\d+) \[label=(?P<label>"(?:[^"\\]|\\.)*") fillcolor=(?P<color>\w+)\])'
    r'|(?P<edge>(?P<a>n\d+) -> (?P<b>n\d+)(?: \[style=\w+\])?))$')


def parse_dot(source):
    """Nodes (id -> (label, color, cluster depth)), edges and clusters of DOT source;
    fails on any line that is not a statement make_dot writes."""
    nodes, edges, clusters, depth = {}, [], 0, 0
    lines = source.strip().split("\n")
    assert lines[0] == "digraph {" and lines[-1] == "}"
    for line in lines:
        m = _STATEMENT.match(line.strip())
        assert m, f"not a DOT statement: {line!r}"
        if m["open"]:
            depth += 1
            clusters += m["open"].startswith("subgraph cluster_")
        elif m["close"]:
            depth -= 1
            assert depth >= 0
        elif m["node"]:
            assert m["id"] not in nodes, f"{m['id']} declared twice"
            label = m["label"][1:-1].replace("\\n", "\n").replace('\\"', '"')
            nodes[m["id"]] = (label, m["color"], depth)
        elif m["edge"]:
            edges.append((m["a"], m["b"]))
    assert depth == 0
    for a, b in edges:
        assert a in nodes and b in nodes, f"edge {a} -> {b} to an undeclared node"
    return nodes, edges, clusters


def labels(nodes, color=None):
    return sorted(label for label, c, _ in nodes.values() if color is None or c == color)


def mlp():
    pb.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def test_eager_graph_names_ops_parameters_and_saved_values():
    model = mlp()
    loss = model(pb.ones(5, 3)).pow(2).mean()
    nodes, edges, clusters = parse_dot(
        pb.viz.make_dot(loss, params=dict(model.named_parameters())).source)
    assert clusters == 0
    assert labels(nodes, "lightblue") == ["0.bias\n(4,)", "0.weight\n(4, 3)", "2.bias\n(2,)",
                                          "2.weight\n(2, 4)"]
    assert labels(nodes, "lightgrey") == ["AddmmBackward0", "AddmmBackward0", "MeanBackward0",
                                          "PowBackward0", "TBackward0", "TBackward0",
                                          "TanhBackward0"]
    assert labels(nodes, "darkolivegreen1") == ["()"]
    root = next(k for k, v in nodes.items() if v[1] == "darkolivegreen1")
    assert [b for a, b in edges if nodes[a][0] == "MeanBackward0"] == [root]
    saved = pb.viz.make_dot(loss, show_saved=True).source
    s_nodes, _, _ = parse_dot(saved)
    assert "result\n(5, 4)" in labels(s_nodes, "orange")  # tanh saves its result
    assert "self\n(5, 2)" in labels(s_nodes, "orange")  # pow its input


def test_compiled_regions_are_clusters():
    model = mlp()
    fast = pb.compile(model)
    x = pb.ones(5, 3)
    out = (fast(x) * 2 + fast(x)).sum()
    nodes, edges, clusters = parse_dot(
        pb.viz.make_dot(out, params=dict(model.named_parameters())).source)
    assert clusters == 2  # two calls, two CompiledFunctionBackward nodes
    inside = [label for label, _, depth in nodes.values() if depth == 2]
    assert "tanh\n(5, 4)" in inside and "layer0_weight\n(4, 3)" in inside
    assert labels(nodes, "lightblue").count("0.weight\n(4, 3)") == 1  # one leaf, two edges
    leaf = next(k for k, v in nodes.items() if v[0] == "0.weight\n(4, 3)")
    assert len([b for a, b in edges if a == leaf]) == 2
    source = pb.viz.make_dot(out).source
    assert 'label="CompiledFunctionBackward: Sequential.forward"' in source


def _tanh_rnn(w, xs):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        h = np.tanh(w * h + xs[t])
    return (h ** 2).sum()


def test_a_compiled_loop_draws_as_one_op_of_the_region():
    # was: AttributeError ('NoneType' object has no attribute 'id'): a loop's equation
    # has several outputs and no single one
    w, xs = pb.tensor(np.full(3, 0.5), requires_grad=True), pb.ones(4, 3)
    out = pb.compile(_tanh_rnn)(w, xs)
    nodes, edges, clusters = parse_dot(pb.viz.make_dot(out).source)
    assert clusters == 1
    inside = [label for label, _, depth in nodes.values() if depth == 2]
    assert any(label.startswith("scan\n") for label in inside), inside
    out.backward()
    assert parse_dot(pb.viz.make_dot(out).source)[2] == 1


def test_several_roots_and_bad_input():
    a = pb.ones(2, requires_grad=True)
    nodes, _, _ = parse_dot(pb.viz.make_dot((a * 2, a.exp())).source)
    assert labels(nodes, "darkolivegreen1") == ["(2,)", "(2,)"]
    assert labels(nodes, "lightblue") == ["(2,)"]  # one leaf, drawn once
    with pytest.raises(TypeError, match="expected a Tensor"):
        pb.viz.make_dot("loss")


@pytest.fixture
def fake_dot(tmp_path, monkeypatch):
    """A ``dot`` on PATH that writes a tiny SVG and records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "dot"
    script.write_text(f"#!{sys.executable}\n"
                      "import sys\n"
                      "args = sys.argv[1:]\n"
                      "out = args[args.index('-o') + 1]\n"
                      "source = open(args[-1]).read()\n"
                      "assert source.startswith('digraph {')\n"
                      "open(out, 'w').write('<svg>' + args[0] + '</svg>')\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
    return tmp_path


def test_render_runs_dot_and_save_writes_the_source(fake_dot):
    dot = pb.viz.make_dot((pb.ones(2, requires_grad=True) * 3).sum())
    assert dot.render(fake_dot / "g.svg") == str(fake_dot / "g.svg")
    assert (fake_dot / "g.svg").read_text() == "<svg>-Tsvg</svg>"
    dot.render(fake_dot / "g.out", format="png")
    assert (fake_dot / "g.out").read_text() == "<svg>-Tpng</svg>"
    dot.save(fake_dot / "g.gv")
    assert (fake_dot / "g.gv").read_text() == dot.source


def test_render_without_graphviz_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    dot = pb.viz.make_dot((pb.ones(2, requires_grad=True) * 3).sum())
    with pytest.raises(RuntimeError, match="Graphviz's `dot` program, which is not on PATH. "
                                           "Install Graphviz"):
        dot.render(tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


class Page(HTMLParser):
    """Tags (balanced), ids, links, and the text of each block by id."""

    VOID = {"meta", "br", "img", "link", "input", "hr"}

    def __init__(self):
        super().__init__()
        self.stack, self.ids, self.links, self.text = [], set(), [], {}
        self.block = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag not in self.VOID:
            self.stack.append((tag, attrs.get("id")))
        if "id" in attrs:
            assert attrs["id"] not in self.ids, f"id {attrs['id']} twice"
            self.ids.add(attrs["id"])
            self.block = attrs["id"]
            self.text[self.block] = ""
        if tag == "a":
            self.links.append((self.block, attrs["href"]))

    def handle_endtag(self, tag):
        open_tag, ident = self.stack.pop()
        assert open_tag == tag, f"</{tag}> closes <{open_tag}>"
        if ident is not None and ident == self.block:
            self.block = None

    def handle_data(self, data):
        if self.block is not None:
            self.text[self.block] += data


def parse_html(text):
    page = Page()
    page.feed(text)
    page.close()
    assert page.stack == [], f"unclosed tags: {page.stack}"
    return page


def test_compiled_html_links_backward_blocks_to_forward_lines(tmp_path):
    model = mlp()

    def loss_fn(x, y):
        h = model(x)
        return ((h - y) ** 2).mean()

    fn = pb.compile(loss_fn)
    x, y = pb.ones(5, 3), pb.zeros(5, 2)
    path = tmp_path / "page.html"
    text = pb.viz.compiled_html(fn, x, y, path=path)
    assert path.read_text() == text and text.startswith("<!DOCTYPE html>")
    page = parse_html(text)
    forward = {i for i in page.ids if i.startswith("fwd-")}
    backward = {i for i in page.ids if i.startswith("bwd-")}
    assert forward and backward
    for _, href in page.links:
        assert href[1:] in page.ids, f"link {href} lands nowhere"
    for block in backward:  # each backward block links to its line's forward block
        targets = [h[1:] for s, h in page.links if s == block]
        assert targets and all(t in forward for t in targets)
        line = page.text[block].split("# grad of: ")[1].split("  (")[0]
        assert all(line in page.text[t] for t in targets)
    assert any("h = model(x)" in page.text[b] for b in backward)
    assert any("return ((h - y) ** 2).mean()" in page.text[f] for f in forward)
    assert "Values the forward keeps for the backward" in text


def test_compiled_html_of_a_grad_function_and_without_a_backward():
    page = parse_html(pb.viz.compiled_html(pb.value_and_grad(lambda w: (w * w).sum()), pb.ones(3)))
    assert any(i.startswith("fwd-") for i in page.ids)
    no_grad = pb.compile(lambda x: x * 2)
    page = parse_html(pb.viz.compiled_html(no_grad, pb.ones(2)))
    assert not any(i.startswith("bwd-") for i in page.ids)
