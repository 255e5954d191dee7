"""Compare corpora (real TinyStories sample, the stand-in, PrOntoQA) by :func:`story_stats`; print markdown.

    python -m anchorlab.text.corpus_stats [--n 754] [--seed 0]

Rows: each source under the GPT-2 BPE and under a 1,024-token BPE trained on that source itself. The
real sample is used where :func:`~anchorlab.text.stories.sample_path` finds it and is skipped otherwise.
"""

from __future__ import annotations

import argparse

from anchorlab.text.prontoqa import ProntoQAConfig, generate
from anchorlab.text.stories import generate_standin, load_stories, sample_path, story_stats
from anchorlab.text.tokenizers import gpt2_tokenizer, train_bpe

COLUMNS = ("stories", "distinct_words", "mean_words", "vocab_size", "unigram_entropy_bits", "mean_tokens",
           "median_tokens")


def corpora(n: int, seed: int) -> dict[str, list[str]]:
    out = {}
    if (sample_path() / "stories.txt").is_file():
        out["TinyStories sample (real)"] = load_stories(sample_path(), n=n)
    out["stand-in (generate_standin)"] = generate_standin(n, seed)
    out["PrOntoQA (fictional, 1-5 hops)"] = [e.text for e in generate(ProntoQAConfig(), n, seed)]
    return out


def table(n: int = 754, seed: int = 0) -> str:
    gpt2 = gpt2_tokenizer()
    lines = ["| corpus | tokenizer | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---:|" * len(COLUMNS)]
    for name, texts in corpora(n, seed).items():
        for tok_name, tok in (("GPT-2", gpt2), ("own BPE-1024", train_bpe(texts, 1024))):
            s = story_stats(texts, tok)
            cells = [f"{s[c]:.2f}" if isinstance(s[c], float) and not float(s[c]).is_integer() else f"{s[c]:g}"
                     for c in COLUMNS]
            lines.append(f"| {name} | {tok_name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=754, help="documents per corpus")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(table(args.n, args.seed))


if __name__ == "__main__":
    main()
