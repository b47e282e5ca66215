"""computer_use: one model-facing tool driving desktop apps through the cua-driver MCP server (DESIGN §7)."""
