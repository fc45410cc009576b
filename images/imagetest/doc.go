// Package imagetest holds an image engine for tests whose skill image
// builds fail as a real engine's do when a package cannot be installed:
// the build runs sandboxrun's own build code (images.Client) against it,
// in milliseconds. It is plumbing for tests, never linked into the product.
package imagetest
