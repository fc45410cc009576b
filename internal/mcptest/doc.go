// Package mcptest holds what the tests of sandboxrun's MCP server share as
// its clients: calling a tool with a bound wait, and reading a result's
// text. It is plumbing for tests, never linked into the product.
package mcptest
