"""The documentation site (``make docs``): it builds with warnings as errors, every link
and image inside it resolves, and its pages render in a real browser.

The site is built once per run into a temporary folder, exactly as ``make docs`` builds it
(Sphinx -W -n, MyST for the Markdown guides). The browser checks run Debian's headless
Chromium (``apt-get install chromium``; .ci/run installs it): each checked page is
screenshotted (kept under build/docs-screenshots/ to look at) and must not be blank, and
a script run in the page after it loaded reports every image that failed to decode and
every code block, which must be there, highlighted and visible. Without Chromium those
checks skip, saying so.
"""

from __future__ import annotations

import html.parser
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHOTS = ROOT / "build" / "docs-screenshots"

# The guides a user meets first, in the order of the landing page's table of contents.
GUIDES = ["install", "first-acquisition", "engine", "vortex-compat", "hardware", "performance",
          "troubleshooting"]
# The pages rendered in the browser: the landing page, two guides with many code blocks, a
# guide with pictures, an API page.
BROWSER_PAGES = ["index.html", "first-acquisition.html", "troubleshooting.html", "scan.html", "api/engine.html"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return ""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (DOCS / "conf.py").is_file():
        pytest.skip("not a source tree (the tests run against an installed wheel): no docs/conf.py")
    for mod, pkg in (("sphinx", "sphinx"), ("myst_parser", "myst-parser")):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{pkg} is not installed (pip install 'vortexgo[docs]', or make test-deps)")
    out = tmp_path_factory.mktemp("docs") / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                        str(DOCS), str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, f"the site did not build cleanly (make docs):\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}"
    return out


class _Page(html.parser.HTMLParser):
    """The ids a page defines and the links and sources it uses."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: Set[str] = set()
        self.refs: List[Tuple[str, str]] = []  # (tag/attr, url)

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key) and (key == "id" or tag == "a"):
                self.ids.add(a[key] or "")
        if tag == "a" and a.get("href"):
            self.refs.append(("a href", a["href"] or ""))
        if tag in ("img", "script") and a.get("src"):
            self.refs.append((f"{tag} src", a["src"] or ""))
        if tag == "link" and a.get("href"):
            self.refs.append(("link href", a["href"] or ""))


def _parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(errors="replace"))
    return p


def test_every_guide_is_a_page_of_the_site(site: Path) -> None:
    for name in GUIDES + ["index", "api/index", "api/engine", "development", "design", "bench", "soak"]:
        assert (site / f"{name}.html").is_file(), f"{name} is not in the site"
    index = (site / "index.html").read_text()
    # The table of contents puts the guides first and the development notes last.
    order = [index.find(f'href="{n}.html"') for n in ("install", "first-acquisition", "engine", "troubleshooting",
                                                      "api/index", "development")]
    assert all(i >= 0 for i in order) and order == sorted(order), order


def test_every_internal_link_and_image_resolves(site: Path) -> None:
    pages: Dict[Path, _Page] = {p: _parse(p) for p in site.rglob("*.html")}
    checked, problems = 0, []
    for page, parsed in pages.items():
        if page.parts[-2:-1] == ("_modules",) or "_sources" in page.parts:
            continue
        for what, url in parsed.refs:
            u = urlsplit(url)
            if u.scheme or url.startswith("//") or url.startswith("mailto:"):
                continue
            target = page if not u.path else (page.parent / unquote(u.path)).resolve()
            checked += 1
            if not target.exists():
                problems.append(f"{page.relative_to(site)}: {what}={url}: no such file")
            elif u.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(u.fragment) not in ids:
                    problems.append(f"{page.relative_to(site)}: {what}={url}: no such anchor")
    assert not problems, "\n".join(problems[:50])
    assert checked > 500, checked


def test_pictures_are_in_the_site(site: Path) -> None:
    for page, name in (("index.html", "liveview.png"), ("scan.html", "scan_queue.png")):
        srcs = [u for w, u in _parse(site / page).refs if w == "img src"]
        hit = [u for u in srcs if u.endswith(name)]
        assert hit, f"{page}: no <img> of {name} ({srcs})"
        assert (site / page).parent.joinpath(hit[0]).stat().st_size > 1000


def test_code_blocks_are_highlighted_in_the_html(site: Path) -> None:
    text = (site / "first-acquisition.html").read_text()
    assert text.count('class="highlight-python') >= 6
    assert 'class="highlight-bash' in text
    assert '<span class="n">engine</span><span class="o">.</span><span class="n">prepare</span>' in text


# ------------------------------------------------------------------- in a browser

# Appended to a copy of a page: once everything loaded, it writes what it found into the DOM.
_PROBE = """
<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const code = [...document.querySelectorAll("div.highlight pre")];
  const r = {
    images: imgs.length,
    broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute("src")),
    code_blocks: code.length,
    code_empty: code.filter(p => p.textContent.trim() === "").length,
    code_hidden: code.filter(p => p.getBoundingClientRect().height < 10).length,
    code_clipped: code.filter(p => p.scrollWidth > p.clientWidth + 2).map(p => p.textContent.split("\\n")[0]),
    highlighted_spans: document.querySelectorAll("div.highlight pre span").length,
    code_font: code.length ? getComputedStyle(code[0]).fontFamily : "",
    title: document.title,
    sidebar_links: document.querySelectorAll(".sphinxsidebar a").length,
    api_entries: document.querySelectorAll("dl.py > dt.sig").length,
  };
  const out = document.createElement("pre");
  out.id = "vg-probe";
  out.textContent = JSON.stringify(r);
  document.body.appendChild(out);
});
</script>
"""


def _browser(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    exe = _chromium()
    if not exe:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--hide-scrollbars", "--mute-audio", f"--user-data-dir={SHOTS / '.profile'}"]
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", BROWSER_PAGES)
def test_page_renders_in_chromium(site: Path, page: str) -> None:
    from PIL import Image

    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / (page.replace("/", "_").removesuffix(".html") + ".png")
    shot.unlink(missing_ok=True)
    r = _browser(f"--screenshot={shot}", "--window-size=1280,2000", (site / page).as_uri())
    assert shot.is_file(), f"no screenshot of {page}: {r.stderr[-2000:]}"
    with Image.open(shot) as im:
        assert im.size == (1280, 2000)
        gray = im.convert("L")
        hist = gray.histogram()
        colors = len(im.convert("RGB").getcolors(1 << 20) or [])
    non_white = sum(hist[:240]) / (1280 * 2000)
    assert colors > 50 and non_white > 0.02, f"{shot}: looks blank ({colors} colours, {non_white:.1%} not white)"

    probe = (site / page).with_name((site / page).stem + ".vg-probe.html")
    probe.write_text((site / page).read_text().replace("</body>", _PROBE + "</body>"))
    try:
        r = _browser("--virtual-time-budget=5000", "--window-size=1280,2000", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink()
    start = r.stdout.find('<pre id="vg-probe">')
    assert start >= 0, f"{page}: the probe did not run\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    found = json.loads(html.unescape(r.stdout[start + len('<pre id="vg-probe">'):].split("</pre>", 1)[0]))
    assert found["title"] and "vortexgo" in found["title"], found
    assert not found["broken"], f"{page}: images that did not load: {found['broken']}"
    assert found["sidebar_links"] > 5, found
    if page == "index.html":
        assert found["images"] >= 1, found
    if page in ("first-acquisition.html", "troubleshooting.html"):
        assert found["code_blocks"] >= 3 and found["code_empty"] == 0 and found["code_hidden"] == 0, found
        assert found["highlighted_spans"] > 20 and "mono" in found["code_font"].lower(), found
        # At 1280 pixels the code fits: no block needs a horizontal scroll bar.
        assert not found["code_clipped"], f"{page}: code wider than the page: {found['code_clipped']}"
    if page.startswith("api/"):
        assert found["api_entries"] > 20, found

