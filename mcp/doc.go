// Package mcp serves sandboxrun over the Model Context Protocol, with the
// official Go SDK: tools to list, activate and run skills (list_skills,
// activate_skill, run_skill_script, run_skill_command, run_python) and each
// skill's files as skill:// resources, over stdio (sandboxrun mcp) or
// Streamable HTTP (HTTPHandler, which sandboxrun serve mounts at /mcp).
//
// It is a front end and nothing more: every tool call is one call on a
// sandboxrun.Service, which owns policy, images, the engine and the audit
// log. The tools' schemas are derived from the Go types in tools.go, once;
// Definitions renders the same tools for OpenAI and Anthropic function
// calling, for hosts that run their own loop.
package mcp
