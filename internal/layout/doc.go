// Package layout holds the facts every part of sandboxrun must agree on,
// each stated once: where things are inside a sandbox, the ids a sandbox
// runs as, the io.sandboxrun.* label keys, and the names of the images
// sandboxrun makes. It imports nothing of the project, so policy, sandbox,
// images and every backend can depend on it.
package layout
