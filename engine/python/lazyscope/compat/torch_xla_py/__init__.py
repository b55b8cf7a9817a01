"""``torch_xla_py`` (the early API guide's package name) → the same aliases as torch_xla."""
