"""MCP client plumbing for the MCP servers an editor passes to a session (stdio, HTTP, SSE)."""
