"""The README and docs/ link only to files and sections that exist (relative links; web links are not
followed). Section anchors are GitHub's: the heading lower-cased, punctuation other than '-' dropped, spaces
as '-', a repeated heading numbered -1, -2, ..."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)


def heading_anchors(md: Path) -> set[str]:
    out: set[str] = set()
    seen: dict[str, int] = {}
    for line in FENCE.sub("", md.read_text()).splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(files: list[Path]) -> list[str]:
    bad = []
    for md in files:
        for target in LINK.findall(FENCE.sub("", md.read_text())):
            if re.match(r"[a-z]+:", target):  # http(s):, mailto: ...
                continue
            path, _, anchor = target.partition("#")
            dest = md.parent / path if path else md
            if not dest.exists():
                bad.append(f"{md.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in heading_anchors(dest):
                bad.append(f"{md.relative_to(ROOT)}: {target} (no such section)")
    return bad


def link_targets(files: list[Path]) -> list[Path]:
    return [md.parent / t.partition("#")[0] for md in files for t in LINK.findall(FENCE.sub("", md.read_text()))
            if not re.match(r"[a-z]+:", t) and t.partition("#")[0]]


def test_readme_and_docs_links_resolve():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(files) > 10
    assert broken_links(files) == []


def test_no_link_points_into_what_git_ignores():
    """A linked file that exists here but is git-ignored (a folder named runs/, say) is missing from every clone."""
    import shutil
    import subprocess

    import pytest

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    targets = sorted({str(p.resolve().relative_to(ROOT)) for p in link_targets(
        [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]) if p.exists()})
    assert len(targets) > 50
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(targets),
                             capture_output=True, text=True).stdout.split()
    assert ignored == []


def test_link_checker_finds_a_missing_file_and_section(tmp_path, monkeypatch):
    monkeypatch.setattr("tests.test_docs_links.ROOT", tmp_path)
    (tmp_path / "b.md").write_text("# The γ line: 3/3 (bf16)\n## Same\n## Same\n")
    (tmp_path / "a.md").write_text("[ok](b.md#the-γ-line-33-bf16) [ok](b.md#same-1) ![img](b.md) [web](https://x.y/z)\n"
                                   "```\n[in code](nowhere.md)\n```\n[bad](c.md) [bad](b.md#other)\n")
    assert broken_links([tmp_path / "a.md"]) == ["a.md: c.md (no such file)", "a.md: b.md#other (no such section)"]


COMMAND = re.compile(r"anchorlab (train|lm|seq2seq|sweep|config) (configs/[\w./-]+\.toml)([^`\n|#]*)")
PLACEHOLDER = re.compile(r"=(\$?[A-Z][A-Z_]*,?|.*(…|\.\.\.).*)$")  # init.gamma=G, task.reference=$REF, seed=N


def doc_commands() -> list[tuple[str, str, str, list[str]]]:
    """(doc, command, config file, --set values) of every `anchorlab train|lm|seq2seq|sweep|config FILE ...` in the
    README and docs/ (continued lines joined)."""
    import shlex

    out = []
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"\\\n\s*", " ", md.read_text())
        for cmd, path, rest in COMMAND.findall(text):
            words = shlex.split(rest.replace("$", ""))
            sets = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--set"]
            out.append((md.name, cmd, path, sets))
    return out


def test_every_config_the_docs_run_loads_with_its_command_and_overrides(tmp_path):
    """`anchorlab train|lm|seq2seq|config FILE --set ...` in the README and docs/ names a run config of that kind
    and keys and values it takes, and `anchorlab sweep FILE` a sweep (a sweep file given to `train` was once the
    README's first example). Placeholder values (G, N, $REF) are left out; a reference file is a stand-in."""
    from anchorlab.config import load_config
    from anchorlab.sweep import load_sweep
    from anchorlab.text.config import load_lm_config
    from anchorlab.text.seq2seq_config import load_s2s_config

    load = {"train": load_config, "config": load_config, "lm": load_lm_config, "seq2seq": load_s2s_config,
            "sweep": load_sweep}
    (tmp_path / "ref.npz").write_bytes(b"")
    commands = doc_commands()
    assert len(commands) > 50
    for doc, cmd, path, sets in commands:
        sets = [f"task.reference='{tmp_path / 'ref.npz'}'" if s.startswith("task.reference=") else s for s in sets]
        sets = [s for s in sets if not PLACEHOLDER.search(s)]
        try:
            load[cmd](ROOT / path, sets)
        except Exception as e:  # the doc and command, then the loader's own line
            raise AssertionError(f"{doc}: anchorlab {cmd} {path} --set {' --set '.join(sets)}: {e}") from e


def test_every_figure_and_reproduction_the_docs_name_exists():
    """`anchorlab figure NAME` and `anchorlab reproduce NAME` in the README and docs/ name a registered recipe and
    an entry of configs/reproduce.toml."""
    from anchorlab.figures import FIGURES, _load_all
    from anchorlab.reproduce import load_registry

    _load_all()
    entries = load_registry()
    docs = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    text = "\n".join(md.read_text() for md in docs)
    figures = set(re.findall(r"anchorlab figure ([a-z][a-z0-9-]*[a-z0-9])", text)) - {"list"}
    reproductions = set(re.findall(r"anchorlab reproduce ([a-z][a-z0-9-]*[a-z0-9])", text)) - {"list"}
    assert len(figures) > 20 and len(reproductions) > 10
    assert figures - set(FIGURES) == set()
    assert reproductions - set(entries) == set()
