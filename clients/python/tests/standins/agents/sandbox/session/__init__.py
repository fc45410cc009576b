"""Stand-in of agents.sandbox.session."""
