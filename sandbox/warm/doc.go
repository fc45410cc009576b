// Package warm decides how many warm sandboxes each configuration keeps,
// for the pools of every backend (sandbox/engine, sandbox/docker, sandbox/kube): a fixed
// number, or a number that follows each configuration's recent demand
// within a total cap. It counts and plans; the pools start and remove.
package warm
