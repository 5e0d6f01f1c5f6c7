"""`anvilfs mcp`: a session's tools for its agent CLI, over the Model Context Protocol (docs/bots.md).

A client of the tree like `anvilfs web`: every tool is reads and writes of
tree files (tools.py), attached as the session (tree.py); serve.py is the
SDK's stdio server around them.
"""
