// Package where keeps the host's paths in a message as values, so that one
// message can be written for either of its two readers: the operator, who
// is shown the paths, and a remote caller (the HTTP API, an MCP client),
// who is shown what the sandbox calls them and never a folder of the host.
//
// A message is composed once, with each host path marked by [Path], and
// rendered with a [Namer] when it is read: [Text.String] and
// [Error.Error] for the operator, [Render] for a caller. Nothing is
// rewritten after the fact, so a path cannot slip through because a
// pattern missed it. It imports nothing of the project.
package where
