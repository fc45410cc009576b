"""Stand-in of google-adk (1.x): only google.adk.code_executors."""
