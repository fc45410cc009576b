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
	// StreamUsage offers the sandbox's resource use: init opens it before
	// the child starts; the host writes UsageAsk for each sample it wants
	// and init answers with one UsageSample as a JSON line. A host that
	// does not know the kind closes the stream, and init stops serving it.
	StreamUsage byte = 'U'
	// StreamSkillIn asks for the skill's files (Job.Skill): the host
	// answers with a tar stream of them and closes its side.
	StreamSkillIn byte = 'S'
)

// UsageAsk is the host's request for one UsageSample on a StreamUsage
// stream.
const UsageAsk byte = '?'

// MaxUsageLine bounds a UsageSample's line: a longer one did not come
// from init.
const MaxUsageLine = 512

// UsageSample is the sandbox's use as init reads it from its own cgroup
// (the Pod's container's) and its workspace: CPU cumulative, the rest now.
type UsageSample struct {
	CPUNS       int64 `json:"cpu_ns"`
	MemoryBytes int64 `json:"memory_bytes"`
	Pids        int64 `json:"pids"`
	// WorkspaceBytes is what the writable workspace's tmpfs holds beyond
	// the files fetched into it; nil without a writable workspace.
	WorkspaceBytes *int64 `json:"workspace_bytes,omitempty"`
	// Error says why no sample could be read (the cgroup's files are not
	// where init looks).
	Error string `json:"error,omitempty"`
}

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
