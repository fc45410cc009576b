// Package doccheck keeps the project's documentation honest: every relative
// link in a Markdown file leads to a file that exists, every #anchor names a
// heading of its target (by GitHub's slug rules), and every section that code,
// Makefile or script comments cite ("README, \"Section\"", docs/x.md) exists.
// Its test runs over the whole repository with the unit tests.
package doccheck
