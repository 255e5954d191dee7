"""Real-language data for the GPT-2 experiments.

``prontoqa`` (+ ``prontoqa_reasoner``): the PrOntoQA generator; ``stories``: TinyStories loaders, the
offline stand-in and corpus statistics; ``tokenizers``: GPT-2's BPE offline and small trained BPEs;
``mix``: PrOntoQA + stories next-token rows with per-source labels; ``corpus_stats``: the docs table.
"""
