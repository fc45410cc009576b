// Package skillimage finds, builds and prunes the images of skills that
// declare packages: the image a run starts in, as its plan chose it, the
// build behind `sandboxrun build`, and the prune behind `images prune`.
package skillimage
