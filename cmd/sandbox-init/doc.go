// Command sandbox-init is PID 1 of every sandboxrun container. It reads one
// frame.Job from stdin, runs the child in its own process group, relays the
// child's stdout and stderr live as frames on its own stdout and ends the
// stream with exactly one Result frame: exit code or signal, timeout, byte
// counts, CPU time, peak RSS. Being PID 1, it also reaps every orphan that is
// re-parented to it.
//
// It is built static (CGO_ENABLED=0), so it runs in any runner image, and
// links little beyond the standard library: golang.org/x/sys/unix,
// hashicorp/yamux (the channel to the host) and this module's
// internal/frame and internal/layer, which import the standard library
// only. Its own diagnostics go to stderr as plain text; stdout carries
// frames and nothing else.
package main
