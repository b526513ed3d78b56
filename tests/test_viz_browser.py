"""pb.viz.compiled_html in a real browser: headless Chromium (Debian's ``chromium``
package; skipped when it is not installed) renders the page, and every link from a
forward line, followed, reaches a backward block that exists, is laid out and is
highlighted as the target (the page's ``:target`` style)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

import pullback as pb

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium",
                             shutil.which("chromium-browser")) if p and os.path.exists(p)),
                None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium: on Debian, "
                                "apt-get install chromium")

# Run in the page after it loaded: follow each link as a click would and record
# what it reached; the result goes into the DOM, which Chromium prints.
PROBE = """<script>
window.addEventListener("load", () => {
  const columns = [...document.querySelectorAll(".column")].map(
    c => [c.querySelector("h2").textContent, c.getBoundingClientRect().left]);
  const links = [...document.querySelectorAll('a[href^="#"]')].map(a => {
    const from = a.closest(".block").id;
    a.click();
    const target = document.querySelector(":target");
    return {from: from, href: a.getAttribute("href"), hash: location.hash,
            reached: target && target.id,
            height: target ? target.getBoundingClientRect().height : 0,
            border: target ? getComputedStyle(target).borderLeftColor : "",
            text: target ? target.textContent : ""};
  });
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({columns: columns, links: links});
  document.body.appendChild(out);
});
</script>
"""


def _dom(path, tmp_path) -> str:
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-extensions", f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom", path.as_uri()]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_page_renders_and_forward_lines_reach_their_backward_blocks(tmp_path):
    @pb.compile
    def loss(x, w):
        h = (x @ w).tanh()
        return (h * h).sum()

    page = pb.viz.compiled_html(loss, pb.ones(2, 3), pb.ones(3, 3, requires_grad=True))
    path = tmp_path / "page.html"
    path.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _dom(path, tmp_path)
    assert re.search(r"def \w*loss_forward\(x, w\):", dom)
    assert re.search(r"def \w*loss_backward\(", dom)
    probe = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S).group(1)
                       .replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
    (fwd, fwd_left), (bwd, bwd_left) = probe["columns"]
    assert fwd.startswith("Forward") and bwd.startswith("Backward")
    assert fwd_left < bwd_left  # side by side, forward first
    forward_links = [k for k in probe["links"] if k["from"].startswith("fwd-")]
    assert len(forward_links) >= 2  # both lines of loss have a gradient block
    for link in probe["links"]:
        assert link["hash"] == link["href"] and link["reached"] == link["href"][1:]
        assert link["height"] > 0
        assert link["border"] == "rgb(230, 149, 0)"  # .block:target
    for link in forward_links:
        assert link["reached"].startswith("bwd-") and "# grad of: " in link["text"]
    lines = {k["text"].split("# grad of: ")[1].split("  (")[0] for k in forward_links}
    assert lines == {"h = (x @ w).tanh()", "return (h * h).sum()"}
