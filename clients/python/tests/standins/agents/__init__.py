"""Stand-in of openai-agents (0.22): only agents.sandbox."""
