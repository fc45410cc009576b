// Package frame is the wire protocol between the host and sandbox-init, the
// PID 1 of every sandbox. The host writes one JSON Job to the container's
// stdin; init answers on its stdout with a sequence of frames (child stdout,
// child stderr) closed by exactly one Result frame carrying a JSON Report.
//
// It is shared by cmd/sandbox-init and the sandbox package and imports
// nothing beyond the standard library, so the init binary stays small.
package frame
