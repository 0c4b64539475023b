"""One module per action; each exposes ``async run(input, config, ctx) -> ToolResult``."""
