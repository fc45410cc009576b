// Package caller carries who made a request from the front end that
// authenticated it (server's bearer tokens) to the handlers behind it (the
// MCP endpoint), so that one check decides the owner every handler acts for.
package caller
