"""How wgrad writes: its consoles, the table grid, files replaced atomically."""
