package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// BenchmarkRunCost measures what a session adds to a run on the host,
// whatever the backend: the lease, the workspace's facts a copy-on-write
// view is sized by (sandbox.FactsOf: the store's own, not a walk), a
// run's change of one small file applied, and the release. A run's cost
// must not grow with the files it leaves alone.
func BenchmarkRunCost(b *testing.B) {
	for _, n := range []int{0, 1000, 20000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			s := openStore(b, Limits{MaxFiles: 100000}, withoutSync())
			id := create(b, s)
			for i := range n {
				dir := filepath.Join(wsPath(s, id), fmt.Sprintf("d%d", i%50))
				_ = os.MkdirAll(dir, 0o755)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), []byte("data"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			layer := layerOf(b, tarFile{name: "out.json", body: `{"ok":true}`})
			for b.Loop() {
				l, err := s.Acquire(b.Context(), owner, id)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := sandbox.FactsOf(&sandbox.Spec{Workspace: l.Dir, WorkspaceWritable: true, WorkspaceFacts: l.Facts}); err != nil {
					b.Fatal(err)
				}
				if _, err := l.ApplyChanges(b.Context(), bytes.NewReader(layer)); err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
}
