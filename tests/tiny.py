"""A tiny anchor-task base config as TOML, for tests that write sweep files (d_model 16, 2 epochs of 1,600 rows)."""

TINY_ANCHOR_TOML = """
[task]
data_size = 1600
[model]
d_model = 16
d_head = 8
d_mlp = 16
[train]
batch_size = 128
epochs = 2
warmup_epochs = 1
cosine_epochs = 1
threads = 1
"""
