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


def test_readme_and_docs_links_resolve():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(files) > 10
    assert broken_links(files) == []


def test_link_checker_finds_a_missing_file_and_section(tmp_path, monkeypatch):
    monkeypatch.setattr("tests.test_docs_links.ROOT", tmp_path)
    (tmp_path / "b.md").write_text("# The γ line: 3/3 (bf16)\n## Same\n## Same\n")
    (tmp_path / "a.md").write_text("[ok](b.md#the-γ-line-33-bf16) [ok](b.md#same-1) ![img](b.md) [web](https://x.y/z)\n"
                                   "```\n[in code](nowhere.md)\n```\n[bad](c.md) [bad](b.md#other)\n")
    assert broken_links([tmp_path / "a.md"]) == ["a.md: c.md (no such file)", "a.md: b.md#other (no such section)"]
