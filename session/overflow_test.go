package session

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestApplyChangesKeepsWhatFits: a run's changes past the session's room
// are kept as far as they fit, each file whole or not at all, in the
// layer's order; what is left out keeps what the workspace had, the
// session stays within its quota, and the lease says what was left out.
func TestApplyChangesKeepsWhatFits(t *testing.T) {
	big := strings.Repeat("b", 3000)
	tests := []struct {
		name    string
		layer   []tarFile
		want    []sandbox.FileChange
		notKept []string
		files   map[string]string // the workspace after, "keep" aside
	}{{
		name:    "one file past the room, one that fits after it",
		layer:   []tarFile{{name: "a-big", body: big}, {name: "b-small", body: "small"}},
		want:    []sandbox.FileChange{change("b-small", sandbox.FileCreated, "small")},
		notKept: []string{"a-big"},
		files:   map[string]string{"b-small": "small"},
	}, {
		name:    "a rewrite past the room keeps the old file",
		layer:   []tarFile{{name: "keep", body: big + big}},
		want:    []sandbox.FileChange{},
		notKept: []string{"keep"},
	}, {
		name:    "deletions, folders and links are kept",
		layer:   []tarFile{wh(".wh.gone"), {name: "d/", typ: tar.TypeDir, mode: 0o755}, {name: "d/big", body: big}, {name: "ln", typ: tar.TypeSymlink, link: "keep"}},
		want:    []sandbox.FileChange{change("gone", sandbox.FileDeleted, ""), {Path: "ln", Change: sandbox.FileCreated}},
		notKept: []string{"d/big"},
		files:   map[string]string{"ln": "keep"},
	}, {
		name:    "a hard link to a file left out is left out",
		layer:   []tarFile{{name: "big", body: big}, {name: "hard", typ: tar.TypeLink, link: "big"}},
		want:    []sandbox.FileChange{},
		notKept: []string{"big", "hard"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const quota = 4096
			s := openStore(t, Limits{Quota: quota}, withoutSync())
			id := create(t, s)
			put(t, s, id, "keep", strings.Repeat("k", 1500))
			put(t, s, id, "gone", "g")
			l, err := s.Acquire(context.Background(), owner, id)
			require.NoError(t, err)
			got, err := l.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tt.layer...)))
			require.NoError(t, err)
			nk := l.NotKept()
			l.Release()
			if got == nil {
				got = []sandbox.FileChange{}
			}
			require.Equal(t, tt.want, got)
			require.NotNil(t, nk)
			require.Equal(t, tt.notKept, nk.Files)
			require.Equal(t, len(tt.notKept), nk.Count)
			require.Equal(t, LimitQuota, nk.Limit.Limit)
			require.Contains(t, nk.Limit.Hint, "sessions.quota")

			ws := wsPath(s, id)
			b, err := os.ReadFile(filepath.Join(ws, "keep"))
			require.NoError(t, err)
			require.Equal(t, strings.Repeat("k", 1500), string(b), "a file left out keeps what the workspace had")
			for p, body := range tt.files { // a link's body is its target
				b, err := os.ReadFile(filepath.Join(ws, p))
				if target, lerr := os.Readlink(filepath.Join(ws, p)); lerr == nil {
					b, err = []byte(target), nil
				}
				require.NoError(t, err, p)
				require.Equal(t, body, string(b), p)
			}
			for _, p := range tt.notKept {
				if p != "keep" {
					require.NoFileExists(t, filepath.Join(ws, p))
				}
			}
			info, err := s.Get(owner, id)
			require.NoError(t, err)
			require.LessOrEqual(t, info.BytesUsed, int64(quota), "the session stays within its quota")
			requireNoTemp(t, s, id)
		})
	}
}

// TestApplyChangesAllFitNotKeptIsNil: a lease whose changes all fit says
// nothing was left out.
func TestApplyChangesAllFitNotKeptIsNil(t *testing.T) {
	s := openStore(t, Limits{Quota: 4096}, withoutSync())
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	defer l.Release()
	require.Nil(t, l.NotKept(), "before any change")
	_, err = l.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tarFile{name: "a", body: "x"})))
	require.NoError(t, err)
	require.Nil(t, l.NotKept())
}
