package session

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// ErrBadTar is wrapped when a tar upload is malformed or holds an entry
// of a kind the store refuses (a link, a device, set-id bits...).
var ErrBadTar = errors.New("bad tar")

// tarPlan is a validated, staged tar upload, not yet in the workspace.
type tarPlan struct {
	kind  fsroot.Tree
	files map[string]staged
	order int
}

type staged struct {
	name string // in the staging folder
	size int64
	sum  string
	mode fs.FileMode
}

func tarError(i int, name, format string, args ...any) error {
	return fmt.Errorf("%w: entry %d (%q): %s", ErrBadTar, i, fsroot.Shorten(name), fmt.Sprintf(format, args...))
}

// PutTar unpacks a tar into the workspace, all or nothing. Only regular
// files and folders are accepted; absolute names, "..", names CheckPath
// refuses, links (symbolic or hard), devices, fifos, set-id and sticky
// bits, a path that is both a file and a folder, more than MaxFiles
// entries or deeper than MaxDepth fail the whole upload. One leading "./"
// is accepted (tar -C dir . writes it). Files are staged in a reserved
// folder, with their bytes charged while reading, then moved in; a failure
// while moving in undoes what was moved. Files get 0644 (0755 if the tar
// marks them executable), folders 0755. The returned files are sorted by
// path.
func (s *Store) PutTar(owner, id string, r io.Reader) ([]FileInfo, error) {
	var out []FileInfo
	err := s.mutate(owner, id, false, func(ss *sess, ws *os.Root) error {
		stageName := randName()
		if err := ws.Mkdir(stageName, 0o700); err != nil {
			return fmt.Errorf("staging the tar: %w", err)
		}
		defer func() { _ = ws.RemoveAll(stageName) }()
		stage, err := ws.OpenRoot(stageName)
		if err != nil {
			return fmt.Errorf("staging the tar: %w", err)
		}
		defer fsroot.CloseRoot(stage)
		c := s.newCharger(ss, 0)
		plan, err := s.readTar(ws, stage, c, r)
		if err != nil {
			c.settle(false, 0, 0)
			return err
		}
		delta, added, err := s.applyTar(ss, ws, stage, plan)
		if err != nil {
			c.settle(false, 0, 0)
			return err
		}
		c.settle(true, delta, added)
		for p, f := range plan.files {
			out = append(out, FileInfo{Path: p, Size: f.size, SHA256: f.sum})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
		return nil
	})
	return out, err
}

// readTar validates every entry and stages the files' bytes.
func (s *Store) readTar(ws, stage *os.Root, c *charger, r io.Reader) (*tarPlan, error) {
	plan := &tarPlan{kind: fsroot.Tree{}, files: map[string]staged{}}
	credited := map[string]bool{}
	tr := tar.NewReader(r)
	for i := 1; ; i++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reading entry %d: %w: send a tar archive (ustar, pax or gnu)", ErrBadTar, i, err)
		}
		e := fsroot.TarEntry(hdr)
		clean, skip, err := fsroot.CheckEntry(i, e, s.lim.MaxDepth, false)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadTar, err)
		}
		if skip {
			continue
		}
		if err := plan.kind.Record(clean, hdr.Typeflag == tar.TypeDir); err != nil {
			return nil, tarError(i, hdr.Name, "%v", err)
		}
		if len(plan.kind) > s.lim.MaxFiles {
			return nil, &LimitError{Limit: LimitMaxFiles, Value: int64(s.lim.MaxFiles),
				Hint: "the tar has more files and folders than a session may hold: split it, or raise sessions.max_files in the operator policy"}
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if prev, ok := plan.files[clean]; ok { // a later copy wins
			_ = stage.Remove(prev.name)
			c.refund(prev.size)
		} else if !credited[clean] {
			credited[clean] = true
			if _, fi, err := probe(ws, clean); err == nil && fi != nil && fi.Mode().IsRegular() {
				c.credit += fi.Size() // replaced when it lands
			}
		}
		f, err := s.stageFile(stage, c, tr, &plan.order, hdr.Mode)
		if err != nil {
			return nil, err
		}
		plan.files[clean] = f
	}
	return plan, nil
}

// stageFile copies one entry's bytes (counted as read, whatever the
// header claims) into the staging folder.
func (s *Store) stageFile(stage *os.Root, c *charger, r io.Reader, order *int, mode int64) (staged, error) {
	*order++
	st := staged{name: strconv.Itoa(*order), mode: fsroot.FilePerm}
	if mode&0o111 != 0 {
		st.mode = 0o755
	}
	f, err := fsroot.OpenNoFollow(stage, st.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.mode)
	if err != nil {
		return st, fmt.Errorf("staging the tar: %w", err)
	}
	h := sha256.New()
	st.size, err = c.copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Chmod(st.mode)
	}
	if err == nil {
		err = s.syncFile(f) // durable before it is moved in
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var le *LimitError
		if !errors.As(err, &le) && !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("%w: %w", ErrBadTar, err)
		}
		return st, err
	}
	st.sum = hex.EncodeToString(h.Sum(nil))
	return st, nil
}
