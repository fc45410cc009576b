// Package size is sandboxrun's one grammar for memory and disk sizes, read
// by go-units, for command-line flags, operator policy and skill
// frontmatter alike, and its one way of printing them. The three differ
// only in what a number without a unit means: policy refuses it (bytes and
// MiB are both plausible readings), the CLI's --memory and the
// frontmatter's max_memory read it as MiB, and the frontmatter accepts
// only that bare form (the form skills in the wild write).
package size
