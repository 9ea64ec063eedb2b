"""The documentation site builds with `mkdocs build --strict` (no broken link, no missing
reference, no warning), lists every public name in its objects inventory, and renders in
a real browser: the home page, a tutorial and an API page open in headless Chromium with
no console error, and the search box finds `backward`.

Needs the `docs` extra and Debian's `chromium` and `chromium-driver` (scripts/setup.sh
installs them); without them the test fails rather than skips. Screenshots go to the
test's temporary folder and to /tmp/docs_shots/.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path("/tmp/docs_shots")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--window-size=1280,900"]
PAGES = {"home": "", "tutorial": "tutorials/autograd-from-scratch/", "api": "reference/nn/"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    warnings = [ln for ln in done.stderr.splitlines() if "WARNING" in ln]
    assert not warnings, warnings
    return out


def inventory(site: Path) -> set[str]:
    """The object names in the site's Sphinx-style objects.inv (written by mkdocstrings)."""
    raw = (site / "objects.inv").read_bytes()
    body = zlib.decompress(raw.split(b"\n", 4)[4]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line}


def test_build_is_strict_and_inventories_every_public_name(site):
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_docs import MODULES, public, reference_entries
    finally:
        sys.path.remove(str(ROOT / "tests"))
    names = inventory(site)
    # every name a reference page promises was rendered (the hook's expansion included)
    promised, _ = reference_entries()
    assert not promised - names, f"not in objects.inv: {sorted(promised - names)}"
    assert "retrograd.Tensor.backward" in names
    missing = [f"{m}.{n}" for m in MODULES for n, _ in public(m)
               if f"{m}.{n}" not in names and not (m == "retrograd" and n == "jit")]
    assert not missing, f"public names missing from the built reference: {missing}"
    for page in ("img/graph_forward.svg", "img/graph_backward.svg", "search/search_index.json",
                 "benchmarks/index.html"):
        assert (site / page).is_file(), page
    assert "<svg" in (site / "img" / "graph_backward.svg").read_text()
    # the benchmarks page: a table and a plot for every workload of every saved run
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from benchmarks_data import load_runs, slug
    finally:
        sys.path.remove(str(ROOT / "docs"))
    runs = load_runs(ROOT / "docs" / "benchmarks")
    assert {r["name"] for r in runs} >= {"engine", "func", "train"}
    page = (site / "benchmarks" / "index.html").read_text()
    for run in runs:
        assert run["date"] in page and run["machine"] in page
        for workload in run["workloads"]:
            plot = site / "benchmarks" / f"{run['name']}_{slug(workload)}.svg"
            assert plot.is_file() and "<svg" in plot.read_text()[:500], plot
            assert plot.name in page, plot.name


@pytest.fixture(scope="module")
def server(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def _chrome():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    assert binary and Path(driver).exists(), (
        "the docs browser test needs Debian's chromium and chromium-driver: "
        "apt-get install -y chromium chromium-driver (scripts/setup.sh does it as root)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def test_pages_render_without_console_errors_and_search_finds_backward(server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    SHOTS.mkdir(parents=True, exist_ok=True)
    driver = _chrome()
    try:
        wait = WebDriverWait(driver, 20)
        for name, path in PAGES.items():
            driver.get(server + path)
            wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "article h1")))
            wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
            if name == "tutorial":  # the build-time graph pictures are loaded
                wait.until(lambda d: d.execute_script(
                    "return [...document.images].filter(i => i.src.endsWith('.svg'))"
                    ".every(i => i.complete && i.naturalWidth > 0)"))
            time.sleep(0.3)
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, f"{name} page ({path or '/'}): console errors {errors}"
            heading = driver.find_element(By.CSS_SELECTOR, "article h1").text
            assert heading, f"{name} page has an empty title"
            shot = tmp_path / f"{name}.png"
            driver.save_screenshot(str(shot))
            shutil.copy(shot, SHOTS / shot.name)
            if name == "tutorial":  # and one of the lesson's graphs, drawn at build time
                picture = driver.find_element(By.CSS_SELECTOR, "img[src$='graph_backward.svg']")
                driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", picture)
                time.sleep(0.3)
                driver.save_screenshot(str(tmp_path / "tutorial_graph.png"))
                shutil.copy(tmp_path / "tutorial_graph.png", SHOTS / "tutorial_graph.png")

        # the search box: type, wait for results, one of them about backward()
        driver.get(server)
        box = wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "input.md-search__input")))
        box.click()
        box.send_keys("backward")
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".md-search-result__item")))
        results = driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item")
        assert results and any("backward" in r.text.lower() for r in results), \
            [r.text[:80] for r in results]
        driver.save_screenshot(str(tmp_path / "search.png"))
        shutil.copy(tmp_path / "search.png", SHOTS / "search.png")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, f"search: console errors {errors}"
    finally:
        driver.quit()
