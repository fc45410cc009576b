// Package sandboxrun is the one door to sandboxrun: a Service that lists
// and activates skills, explains and runs requests against them under the
// operator's policy, builds and prunes images, and reaps what crashed
// owners left. Each request is decided once, in internal/plan, and that
// plan both runs and explains it; a refused request reaches no backend.
//
// The Service links no backend. Config.Backend (backends.New, or
// backends/dockerbackend.New for Docker alone) or Config.Runner supplies
// one; what a backend can do beyond running (ping, image lookup, reap,
// pool figures) the Service asks with the optional interfaces of package
// sandbox. Config.Images (backends.Images) is the engine images are built
// on; nothing is registered behind the caller's back. cmd/sandboxrun, server and mcp are thin front ends over it.
package sandboxrun
