package frame

import "time"

// The side channel of a job (Job.Channel) is a yamux session: init is its
// client and opens every stream; the host accepts them. The first byte
// init writes on a stream says what it is for.
const (
	// StreamEgress carries one connection to the run's egress proxy.
	StreamEgress byte = 'E'
	// StreamWorkspaceIn asks for the workspace's files: the host answers
	// with a tar stream of them and closes its side.
	StreamWorkspaceIn byte = 'I'
	// StreamWorkspaceOut carries the layer of the workspace's changes,
	// after the Result frame; the host answers with one byte, ChangesTaken
	// or ChangesRefused, once it has dealt with them.
	StreamWorkspaceOut byte = 'O'
)

// The host's answer on a StreamWorkspaceOut stream.
const (
	ChangesTaken   byte = 'K'
	ChangesRefused byte = 'X'
)

// ChannelWindow is each stream's receive window on both sides: what an
// egress connection may have in flight, and what init keeps of it in
// memory (charged to the sandbox).
const ChannelWindow = 256 << 10

// ChangesWait bounds how long init waits for the host to take the
// workspace's changes.
const ChangesWait = 5 * time.Minute
