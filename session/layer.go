package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/layer"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// A run's changes come back as a layer (sandbox.ChangeApplier): a tar in
// the form of an OCI image layer, with whiteouts for deletions, read (and
// its names checked) by internal/layer. This file stages one;
// layerapply.go moves it into the workspace. It is
// the one place a run's writes reach a workspace, for a session and for a
// host folder alike.

// ErrBadLayer is wrapped when a run's change layer is malformed or holds
// an entry the workspace refuses (a device, a fifo, a name that leaves the
// workspace...). Nothing of such a layer is applied.
var ErrBadLayer = errors.New("bad change layer")

// layerOp is the final state a layer gives one path.
type layerOp struct {
	kind   byte // 'd' folder, 'f' regular file, 'l' symlink
	mode   fs.FileMode
	mtime  time.Time
	stage  string // a file's bytes or a link, in the staging folder
	size   int64
	sum    string
	target string
}

// layerPlan is a read, validated and staged layer.
type layerPlan struct {
	ops       map[string]*layerOp
	whiteouts map[string]bool // paths whose earlier content goes
	opaque    map[string]bool // folders whose earlier content goes ("" the workspace)
	parents   map[string]bool // folders implied by the paths recorded
	credited  map[string]bool
	order     int
	// over is what did not fit the budget: files the run's changes held
	// past the session's room, not kept.
	over overflow
}

// overflow lists the files of a layer that were not kept for want of
// room, and the limit they met.
type overflow struct {
	files []string // the first maxOverflowListed, in the layer's order
	count int
	limit *LimitError
	out   map[string]bool // every path left out (count of them, bounded by the entry count)
}

// maxOverflowListed bounds the paths a Result names as not kept.
const maxOverflowListed = 20

func (o *overflow) add(p string, le *LimitError) {
	if o.out == nil {
		o.out = map[string]bool{}
	}
	if !o.out[p] && o.count < maxOverflowListed {
		o.files = append(o.files, p)
	}
	if !o.out[p] {
		o.count++
	}
	o.out[p] = true
	if o.limit == nil {
		o.limit = le
	}
}

// budget bounds a layer's bytes while they are read: a session's charger,
// or nothing for a host folder (the run's write cap bounded them).
type budget interface {
	copy(w io.Writer, r io.Reader) (int64, error)
	// replaces notes the bytes of a file a staged one will replace
	// (negative: a replacement dropped).
	replaces(n int64)
	// refund gives back the bytes of a staged file dropped.
	refund(n int64)
}

// layerConfig is what differs between the owners of a workspace.
type layerConfig struct {
	maxEntries int
	y          fsroot.Durability
	b          budget
}

func layerError(i int, name, format string, args ...any) error {
	return fmt.Errorf("%w: entry %d (%q): %s", ErrBadLayer, i, fsroot.Shorten(name), fmt.Sprintf(format, args...))
}

// applied is what applyLayer did: the changes (files and links; folders
// are not listed), the change in bytes of regular files and in entries,
// and the files left out for want of room.
type applied struct {
	changes []sandbox.FileChange
	delta   int64
	entries int
	over    overflow
}

// applyLayer reads the whole layer into a staging folder at ws's top, then
// applies it: deletions first (whiteouts, opaque folders), then folders,
// files and links by path, each file or link written under a reserved
// name and renamed into place. A malformed layer, one past the entry
// count or a cancelled ctx (while reading) changes nothing. Past the
// budget (a session's room) what fits is kept: files are taken in the
// layer's order, each whole or not at all, and one that does not fit is
// left out (the workspace keeps what it had at that path) and listed in
// over; deletions, folders and links are always kept.
func applyLayer(ctx context.Context, ws *os.Root, r io.Reader, cfg layerConfig) (applied, error) {
	stageName := randName()
	if err := ws.Mkdir(stageName, 0o700); err != nil {
		return applied{}, fmt.Errorf("staging the run's changes: %w", err)
	}
	defer func() { _ = ws.RemoveAll(stageName) }()
	stage, err := ws.OpenRoot(stageName)
	if err != nil {
		return applied{}, fmt.Errorf("staging the run's changes: %w", err)
	}
	defer fsroot.CloseRoot(stage)
	plan, err := readLayer(ctx, ws, stage, r, cfg)
	if err != nil {
		return applied{}, err
	}
	a := &applier{ws: ws, stage: stage, y: cfg.y, dirs: map[string]bool{}, log: newChangeLog()}
	err = a.apply(plan)
	a.sync()
	return applied{changes: a.log.list(), delta: a.delta, entries: a.entries, over: plan.over}, err
}

// readLayer records every entry (read and checked by layer.Reader) and
// stages the bytes of files and links.
func readLayer(ctx context.Context, ws, stage *os.Root, r io.Reader, cfg layerConfig) (*layerPlan, error) {
	plan := &layerPlan{ops: map[string]*layerOp{}, whiteouts: map[string]bool{}, opaque: map[string]bool{}, parents: map[string]bool{}, credited: map[string]bool{}}
	lr := layer.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading the run's changes: %w", err)
		}
		e, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return plan, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadLayer, err)
		}
		if reserved(e.Name) {
			// The store's own temporary names: a run that made one gets
			// nothing from it (the store removes them).
			continue
		}
		if err := plan.add(e, lr, ws, stage, cfg); err != nil {
			return nil, err
		}
		if len(plan.ops)+len(plan.whiteouts)+len(plan.opaque)+plan.over.count > cfg.maxEntries {
			return nil, &LimitError{Limit: LimitMaxFiles, Value: int64(cfg.maxEntries),
				Hint: "the run changed more files, folders and links than a workspace may hold: have it write fewer, or raise sessions.max_files in the operator policy"}
		}
	}
}

// reserved reports whether any element of a slash path is a reserved
// temporary name.
func reserved(name string) bool {
	for _, e := range strings.Split(name, "/") {
		if fsroot.IsTemp(e) {
			return true
		}
	}
	return false
}

// add records one entry.
func (p *layerPlan) add(e *layer.Entry, r io.Reader, ws, stage *os.Root, cfg layerConfig) error {
	op := &layerOp{mode: e.Mode, mtime: e.ModTime}
	switch e.Kind {
	case layer.KindOpaque:
		p.opaque[e.Name] = true
		return nil
	case layer.KindWhiteout:
		p.whiteouts[e.Name] = true
		return nil
	case layer.KindDir:
		op.kind = 'd'
	case layer.KindFile:
		op.kind = 'f'
		if err := p.stageFile(op, e.Name, r, ws, stage, cfg); err != nil {
			return p.leaveOut(e.Name, err)
		}
	case layer.KindHardLink:
		// A hard link in the layer: its own copy of an earlier file of
		// the layer (links never reach outside what the layer wrote).
		if p.ops[e.Linkname] == nil && p.over.out[e.Linkname] {
			p.over.add(e.Name, p.over.limit) // a copy of a file left out
			return nil
		}
		src := p.ops[e.Linkname]
		if src == nil || src.kind != 'f' {
			return layerError(e.Index, e.Raw, "a hard link to %q, which is no earlier file of the layer", e.Linkname)
		}
		f, err := stage.Open(src.stage)
		if err != nil {
			return fmt.Errorf("staging the run's changes: %w", err)
		}
		op.kind, op.mode, op.mtime = 'f', src.mode, src.mtime
		err = p.stageFile(op, e.Name, f, ws, stage, cfg)
		f.Close()
		if err != nil {
			return p.leaveOut(e.Name, err)
		}
	case layer.KindSymlink:
		op.kind, op.target = 'l', e.Linkname
		p.order++
		op.stage = strconv.Itoa(p.order)
		if err := fsroot.WithFd(stage, func(fd int) error { return unix.Symlinkat(e.Linkname, fd, op.stage) }); err != nil {
			return fmt.Errorf("staging the run's changes: %w", err)
		}
		if err := setTimes(stage, op.stage, op.mtime); err != nil {
			return fmt.Errorf("staging the run's changes: %w", err)
		}
	default:
		return layerError(e.Index, e.Raw, "an entry of kind %q, which a workspace does not take", e.Kind)
	}
	return p.record(e.Index, e.Raw, e.Name, op, stage)
}

// record keeps op as clean's final state; a path that is a folder in one
// entry and not in another, or a file under a non-folder, is refused.
func (p *layerPlan) record(i int, shown, clean string, op *layerOp, stage *os.Root) error {
	elems := strings.Split(clean, "/")
	for j := 1; j < len(elems); j++ {
		parent := strings.Join(elems[:j], "/")
		if prev := p.ops[parent]; prev != nil && prev.kind != 'd' {
			return layerError(i, shown, "%q is not a folder earlier in the layer", parent)
		}
		p.parents[parent] = true
	}
	if op.kind != 'd' && p.parents[clean] {
		return layerError(i, shown, "%q holds entries earlier in the layer, so it must be a folder", clean)
	}
	if prev := p.ops[clean]; prev != nil {
		if (prev.kind == 'd') != (op.kind == 'd') {
			return layerError(i, shown, "the layer has %q as a folder and as a file or link: keep one", clean)
		}
		if prev.stage != "" {
			_ = stage.Remove(prev.stage) // a later entry wins; its bytes stay charged
		}
	}
	p.ops[clean] = op
	return nil
}

// leaveOut handles stageFile's error for the file clean: one past the
// session's room (its quota, or the total of all sessions) is left out
// and noted in p.over (an earlier entry of the layer for the same path,
// which fitted, stays); any other error is the layer's.
func (p *layerPlan) leaveOut(clean string, err error) error {
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != LimitQuota && le.Limit != LimitTotalBytes {
		return err
	}
	p.over.add(clean, le)
	return nil
}

// stageFile copies a file's bytes (counted as read, whatever the header
// says) into the staging folder. A file past the budget is not staged:
// its bytes are refunded, the credit for what it would replace withdrawn,
// and the *LimitError returned.
func (p *layerPlan) stageFile(op *layerOp, clean string, r io.Reader, ws, stage *os.Root, cfg layerConfig) error {
	var credit int64
	if !p.credited[clean] {
		p.credited[clean] = true
		if _, fi, err := probe(ws, clean); err == nil && fi != nil && fi.Mode().IsRegular() {
			credit = fi.Size()
			cfg.b.replaces(credit)
		}
	}
	p.order++
	op.stage = strconv.Itoa(p.order)
	f, err := fsroot.OpenNoFollow(stage, op.stage, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("staging the run's changes: %w", err)
	}
	h := sha256.New()
	op.size, err = cfg.b.copy(io.MultiWriter(f, h), r)
	if errors.Is(err, ErrLimit) {
		f.Close()
		_ = stage.Remove(op.stage)
		cfg.b.refund(op.size)
		cfg.b.replaces(-credit)
		p.credited[clean] = false
		return err
	}
	if err == nil {
		err = f.Chmod(op.mode)
	}
	if err == nil {
		err = cfg.y.File(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = setTimes(stage, op.stage, op.mtime)
	}
	if err != nil {
		var le *LimitError
		if !errors.As(err, &le) && !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("staging the run's changes: %w", err)
		}
		return err
	}
	op.sum = hex.EncodeToString(h.Sum(nil))
	return nil
}

// setTimes sets name's modification time in r, never following a link.
func setTimes(r *os.Root, name string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	ts := unix.NsecToTimespec(t.UnixNano())
	return fsroot.WithFd(r, func(fd int) error {
		return unix.UtimesNanoAt(fd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
	})
}
