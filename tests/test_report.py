"""The HTML report: self-contained, every applicable figure present, and it renders in headless Chromium
with every image loaded and no page errors. The browser is installed from the distribution's packages
when missing (root or passwordless sudo, apt-get); the browser tests are skipped only where that fails."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import pytest

from anchorlab.cli import main
from anchorlab.config import ConfigError, load_config
from anchorlab.figures import names
from anchorlab.report import write_report
from anchorlab.sweep import load_sweep, plan
from anchorlab.train import train
from tests.conftest import tiny_config

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Injected at the top of <head> in a copy of the report: records page errors (script errors, failed
# resources, console.error) and, after load, the state of every image and a sort of each sortable table.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  window.__errors.push(e.message || ('resource failed: ' + (e.target && (e.target.src || e.target.href))));
}, true);
var __ce = console.error;
console.error = function () {
  window.__errors.push(Array.prototype.join.call(arguments, ' '));
  __ce.apply(console, arguments);
};
window.addEventListener('load', function () {
  setTimeout(function () {
    var imgs = Array.prototype.map.call(document.images, function (i) {
      return {alt: i.alt, ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth};
    });
    var sorted = Array.prototype.map.call(document.querySelectorAll('table.sortable'), function (t) {
      var th = t.tHead.rows[0].cells[1];
      th.click();
      return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[1].textContent; });
    });
    var pre = document.createElement('pre');
    pre.id = 'probe';
    pre.textContent = JSON.stringify({images: imgs, errors: window.__errors, sorted: sorted});
    document.body.appendChild(pre);
  }, 0);
});
</script>"""


def find_browser() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def install_browser() -> str | None:
    """``apt-get install -y chromium`` as root or through passwordless sudo (with a timeout); None if impossible."""
    if shutil.which("apt-get") is None:
        return None
    if os.geteuid() == 0:
        prefix = []
    elif shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        prefix = ["sudo", "-n"]
    else:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*prefix, "apt-get", "install", "-y", "--no-install-recommends", "chromium"]
    for cmds in ([install], [[*prefix, "apt-get", "update"], install]):
        try:
            if all(subprocess.run(c, capture_output=True, env=env, timeout=900).returncode == 0 for c in cmds):
                break
        except subprocess.TimeoutExpired:
            return None
    return find_browser()


@pytest.fixture(scope="session")
def browser():
    b = find_browser() or install_browser()
    if b is None:
        pytest.skip("no headless Chromium: none of " + ", ".join(BROWSERS) + " is on PATH, and installing "
                    "the distribution's `chromium` package (apt-get as root or with passwordless sudo) was not "
                    "possible here")
    return b


def render(browser: str, page, tmp_path) -> dict:
    """Open a probed copy of ``page`` in headless Chromium; return the probe's JSON."""
    text = page.read_text()
    probed = tmp_path / f"probed_{page.name}"
    probed.write_text(text.replace("<head>", "<head>" + PROBE, 1))
    cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={tmp_path / 'chrome-profile'}", "--virtual-time-budget=20000", "--dump-dom",
           probed.as_uri()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="probe">(.*?)</pre>', out, re.S)
    assert m, f"the probe did not run; Chromium printed: {out[:500]!r}"
    return json.loads(html.unescape(m.group(1)))


def assert_self_contained(text: str) -> list[str]:
    """Every src/href is a data: URI or an in-page anchor; returns the img alts."""
    for attr, url in re.findall(r'\b(src|href)="([^"]*)"', text):
        assert url.startswith(("data:", "#")), f"{attr} points outside the file: {url[:80]}"
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text
    ids = re.findall(r' id="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert {h[1:] for h in re.findall(r'href="(#[^"]+)"', text)} <= set(ids), "an in-page link has no target"
    return re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', text)


@pytest.fixture(scope="module")
def composite_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep") / "run"
    train(tiny_config(**{"train.epochs": 2}), d, show_progress=False)
    return d


def test_run_report_has_everything_and_renders(composite_run, tmp_path, browser):
    page = write_report(composite_run, tmp_path / "r.html")
    text = page.read_text()
    alts = assert_self_contained(text)
    assert alts == ["training curves", "p1-fig3", "p1-fig3b", "p1-fig4", "p1-fig5", "p1-fig12", "p1-fig13",
                    "p1-attribution", "p1-patching", "p1-keys"]
    cfg = json.loads((composite_run / "config.json").read_text())
    for needle in ("Provenance", "git commit", "anchorlab version", composite_run.name, "Resolved config",
                   "Final metrics", "unseen_inferential_acc", "data (CSV)", "wq0_n_groups",
                   f"&quot;gamma&quot;: {cfg['init']['gamma']}", "Held-out pair by the key's position",
                   "<th>6 (2nd anchor last)</th>"):
        assert needle in text, needle
    probe = render(browser, page, tmp_path)
    assert probe["errors"] == []
    assert len(probe["images"]) == len(alts) and all(i["ok"] and i["w"] > 100 for i in probe["images"])


def test_sweep_report_table_sorts_and_renders(tmp_path, browser):
    (tmp_path / "base.toml").write_text("[task]\ndata_size = 1600\n[model]\nd_model = 16\nd_head = 8\nd_mlp = 16\n"
                                        "[train]\nbatch_size = 128\nepochs = 1\nwarmup_epochs = 1\n"
                                        "cosine_epochs = 1\nthreads = 1\n")
    (tmp_path / "s.toml").write_text('name = "t"\nbase = "base.toml"\n[axes]\n"init.gamma" = [1.0, 0.5, 0.7]\n')
    rows = plan(load_sweep(tmp_path / "s.toml"), tmp_path / "sw")
    for _, cfg, d in rows[:2]:  # the third run is left unstarted
        train(cfg, d, show_progress=False)
    page = write_report(tmp_path / "sw", max_run_figures=0)
    assert page == tmp_path / "sw" / "report.html"
    text = page.read_text()
    alts = assert_self_contained(text)
    # two γ finished: P1's γ comparison (with the logged mechanism scalars) opens the page; no run figures with
    # max 0 (their curves are in the figure of all runs)
    assert alts == ["p1-gamma", "p1-curves", "p1-condensation", "phase diagram", "training curves of all runs"]
    assert text.count("figures left out") == 2
    for _, cfg, _ in rows[:2]:
        assert f'id="run-{cfg.run_id()}"' in text and f'href="#run-{cfg.run_id()}"' in text
    assert "not started: " + rows[2][1].run_id() in text and "p1-fig10: the sweep has no model.n_layers axis" in text
    probe = render(browser, page, tmp_path)
    assert probe["errors"] == [] and all(i["ok"] for i in probe["images"]) and len(probe["images"]) == len(alts)
    [gammas] = probe["sorted"]  # column 1 is init.gamma; one click sorts ascending
    assert gammas == ["0.5", "0.7", "1"]
    # two sources in one page (here the same sweep twice): ids stay unique, links keep their targets
    both = write_report([tmp_path / "sw", tmp_path / "sw"], tmp_path / "both.html", max_run_figures=0).read_text()
    assert assert_self_contained(both) == alts + alts[3:]  # one γ comparison (3 figures) over both sources


@pytest.mark.parametrize("model", ["gpt", "emb_mlp"])
def test_mem_rsn_report_skips_what_does_not_apply(tmp_path, model, capsys):
    sets = ["task.name='mem_rsn'", "task.data_size=2000", f"model.name='{model}'", "model.d_model=16",
            "model.d_head=8", "model.d_mlp=16", "train.batch_size=200", "train.epochs=1", "train.threads=1"]
    if model == "emb_mlp":
        sets.append("task.seq_len=3")
    train(load_config(None, sets), tmp_path / "r", show_progress=False)
    assert main(["report", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'r' / 'report.html'}"
    text = (tmp_path / "r" / "report.html").read_text()
    alts = assert_self_contained(text)
    p1 = ["training curves", "p1-fig12", "p1-fig13"] if model == "emb_mlp" else \
        ["training curves", "p1-fig5", "p1-fig12", "p1-fig13"]
    assert alts[:len(p1)] == p1
    assert "p1-fig3: needs the" in text and "rsn_test_acc" in text
    # the P2 figures: each registered one is drawn or listed with the recipe's reason
    p2 = [n for n in names() if n.startswith("p2-")]
    drawn = alts[len(p1):]
    assert drawn and set(drawn) <= set(p2)
    for n in set(p2) - set(drawn):  # the reason as one sentence, not the raw error
        assert f"<li>{n}: " in text and f"<li>{n}: figure {n}:" not in text, n


def test_a_folder_of_runs_is_a_section_per_run(composite_run, tmp_path):
    folder = tmp_path / "runs"
    for name in ("a", "b"):
        shutil.copytree(composite_run, folder / name)
    assert main(["report", str(folder)]) == 0
    text = (folder / "report.html").read_text()
    assert '<a href="#src-0">anchorlab run a</a><a href="#src-1">anchorlab run b</a>' in text
    alts = assert_self_contained(text)
    assert alts[0] == "p1-curves" and "a panel per run" in text  # one γ: the runs side by side first
    assert alts.count("p1-fig3") == 2  # each run's figures, in its own section


def test_bad_source_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="source"):
        write_report(tmp_path)
    assert main(["report", str(tmp_path)]) == 2


def test_mem_rsn_sweep_report(tmp_path):
    (tmp_path / "base.toml").write_text("[task]\nname = 'mem_rsn'\ndata_size = 2000\nseq_len = 3\n[model]\n"
                                        "name = 'emb_mlp'\nd_model = 8\nd_mlp = 16\n[train]\nbatch_size = 200\n"
                                        "epochs = 1\nthreads = 1\n")
    (tmp_path / "s.toml").write_text('name = "p2"\nbase = "base.toml"\n[axes]\n"init.gamma" = [0.3, 0.7]\n')
    for _, cfg, d in plan(load_sweep(tmp_path / "s.toml"), tmp_path / "sw"):
        train(cfg, d, show_progress=False)
    text = write_report(tmp_path / "sw", max_run_figures=0).read_text()
    alts = assert_self_contained(text)
    assert alts[:3] == ["phase diagram", "training curves of all runs", "p2-fig3b"]
    assert alts.count("training curves") == 0  # no run gets figures with max 0: its curves are in the overview
    assert "mem_acc" in text and "p1-fig10: the sweep has no model.n_layers axis" in text
