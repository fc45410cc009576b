// Package skillimage is the one home of the skill image as a skill and a
// policy decide it: which runner (or profile) a skill runs in and builds
// on (Runner), the options of its image from its declared packages and
// the operator's grants (ImageOptions, which the plan reads), and the
// image a run starts in, found, built or pruned (Env). How an image is
// built on the engine from those options (the script, the tag, the build
// container, the lock) is package images', next to the runner image's
// build it shares a client, labels and progress reporting with.
package skillimage
