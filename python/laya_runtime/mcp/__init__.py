"""laya_runtime's MCP stdio server: `laya-mcp-server` (server.py, needs `pip install mcp`) over the
tool layer in tools.py (importable without `mcp`). See docs/python.md."""

__all__ = ["server", "tools"]
