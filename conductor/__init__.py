"""The conductor: runs workflows (TOML) over the anvilfs tree, deterministic and exactly-once.

It touches nothing but the files: it reaches the tree through a 9P connection
(anvilfs.client) or a mounted directory, never the server's code. See
conductor/README.md.
"""
