// Package audit writes the audit log: one JSON line per request, refusals
// included, holding what ran, under which limits and how it ended, but never
// the arguments themselves; and one line per session or upload call
// (Operation), with the caller's owner.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Record is one line of the audit log: what ran, under which limits, and
// how it ended. It never holds the arguments themselves, only their size and
// digest, so the log can be kept where the data may not go.
type Record struct {
	Time  time.Time `json:"time"`
	RunID string    `json:"run_id"`
	// Owner is the caller's: the digest of its token, a front end's name
	// for callers with none, or empty for the operator at the host.
	Owner string `json:"owner,omitempty"`
	// Tenant is the caller's token label (never the token); absent for
	// a caller without one (the CLI, a server without tokens).
	Tenant string `json:"tenant,omitempty"`
	Skill  string `json:"skill"`
	// SkillDigest is the digest of the skill's content
	// (skillstore.Digest), once the skill was found.
	SkillDigest string `json:"skill_digest,omitempty"`
	// Cache is "hit" for a request answered from the result cache (RunID
	// is then the run that made the Result), "miss" for a run kept in it.
	Cache      string   `json:"cache,omitempty"`
	Script     string   `json:"script,omitempty"`
	Argv       []string `json:"argv"`
	ArgsBytes  int      `json:"args_bytes"`
	ArgsSHA256 string   `json:"args_sha256"`
	// ScriptArgs counts the caller's command-line arguments, which Argv
	// leaves out; ScriptArgsSHA256 is the digest of their JSON array.
	ScriptArgs       int           `json:"script_args,omitempty"`
	ScriptArgsSHA256 string        `json:"script_args_sha256,omitempty"`
	ExitCode         int           `json:"exit_code"`
	Signal           string        `json:"signal"`
	TimedOut         bool          `json:"timed_out"`
	OOMKilled        bool          `json:"oom_killed"`
	DurationMS       int64         `json:"duration_ms"`
	Limits           policy.Limits `json:"limits"`
	Image            string        `json:"image"`
	ImageID          string        `json:"image_id"`
	StdoutTruncated  bool          `json:"stdout_truncated"`
	StderrTruncated  bool          `json:"stderr_truncated"`
	// Refused marks a request policy turned down before any sandbox
	// existed; Error says why. Hosts audit attempts, not only executions.
	Refused bool   `json:"refused,omitempty"`
	Error   string `json:"error,omitempty"`
	// PolicyDigest is the sha256 of the operator policy file that decided,
	// or "builtin".
	PolicyDigest string `json:"policy_digest,omitempty"`
	// Egress is what the run's egress proxy decided, every request with
	// its host, port, verdict, bytes and duration; absent without a proxy.
	Egress *egresslog.Record `json:"egress,omitempty"`
}

// NewRecord describes one execution. script is the path relative to the
// skill folder (empty for commands and inline code); args are the bytes the
// script received on stdin.
func NewRecord(spec sandbox.Spec, script string, args []byte, res *sandbox.Result, runErr error) Record {
	sum := sha256.Sum256(args)
	rec := Record{
		Time:       time.Now().UTC(),
		RunID:      spec.RunID,
		Skill:      spec.Skill,
		Script:     script,
		Argv:       spec.Argv,
		ArgsBytes:  len(args),
		ArgsSHA256: hex.EncodeToString(sum[:]),
		Limits:     spec.Limits,
		Image:      spec.Image,
	}
	if res != nil {
		rec.RunID = res.ID
		rec.ExitCode = res.ExitCode
		rec.Signal = res.Signal
		rec.TimedOut = res.TimedOut
		rec.OOMKilled = res.OOMKilled
		rec.DurationMS = res.DurationMS
		rec.Image = res.Image
		rec.ImageID = res.ImageID
		rec.StdoutTruncated = res.StdoutTruncated
		rec.StderrTruncated = res.StderrTruncated
		rec.Error = res.Error
		rec.Egress = res.EgressRecord
	}
	if runErr != nil && rec.Error == "" {
		rec.Error = runErr.Error()
	}
	return rec
}

// WithoutCallerArgv keeps the caller's command-line arguments (the last n
// elements of Argv) out of the record, as the JSON arguments are: only their
// count and a digest stay.
func (r *Record) WithoutCallerArgv(callerArgv []string) {
	if n := len(callerArgv); n > 0 && n <= len(r.Argv) {
		r.Argv = r.Argv[:len(r.Argv)-n]
		r.ScriptArgs = n
		r.ScriptArgsSHA256 = argvDigest(callerArgv)
	}
}

// argvDigest is the sha256 of argv as a JSON array, so ["a b"] and
// ["a", "b"] differ.
func argvDigest(argv []string) string {
	b, err := json.Marshal(argv)
	if err != nil {
		b = nil // a []string always encodes
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// NewRefusal describes a request refused before anything ran: the skill,
// the script or command it asked for, a digest of its arguments, and why.
func NewRefusal(skill, script string, argv []string, args []byte, err error) Record {
	sum := sha256.Sum256(args)
	rec := Record{
		Time:       time.Now().UTC(),
		Skill:      skill,
		Script:     script,
		Argv:       argv,
		ArgsBytes:  len(args),
		ArgsSHA256: hex.EncodeToString(sum[:]),
		ExitCode:   -1,
		Refused:    true,
	}
	if err != nil {
		rec.Error = err.Error()
	}
	return rec
}

// Log appends JSON lines to a file. It is safe for concurrent use; each
// record is written with a single append so lines from concurrent processes
// do not interleave.
type Log struct {
	path string
	mu   sync.Mutex
}

// Open checks that path can be appended to and returns the log.
func Open(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return &Log{path: path}, nil
}

// Append writes rec as one line.
func (l *Log) Append(rec Record) error { return l.write(rec) }

// write appends v as one JSON line, with a single write.
func (l *Log) write(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	_, werr := f.Write(line)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write audit log: %w", werr)
	}
	if cerr != nil {
		return fmt.Errorf("close audit log: %w", cerr)
	}
	return nil
}
