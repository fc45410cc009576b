package layer

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadLayer reads any bytes as a layer: it never panics, every error
// is ErrMalformed, and every name it yields (an entry's, a hard link's)
// stays inside the root and is one a layer can carry.
func FuzzReadLayer(f *testing.F) {
	for _, names := range [][]string{
		{"a/b.txt", "c/", ".wh.gone", "c/.wh..wh..opq"},
		{"../x", "/abs", "a/../.."},
		{"a/b/.wh...", ".wh..wh..opq", "./", "./x"},
		{".wh.d/x", "a//b", "a/.wh."},
	} {
		f.Add(rawLayer(f, names...))
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: "h", Linkname: "../etc/passwd"})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "s", Linkname: "/"})
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("garbage"))

	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for i := 0; i < 10_000; i++ {
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("an error other than ErrMalformed: %v", err)
				}
				return
			}
			if e.Kind == KindOpaque && e.Name == "" {
				continue // the root
			}
			inside(t, e.Name)
			if e.Kind == KindHardLink {
				inside(t, e.Linkname)
			}
			if e.Mode&^0o777 != 0 {
				t.Fatalf("%q: mode %v has more than permission bits", e.Name, e.Mode)
			}
			_, _ = io.Copy(io.Discard, r)
		}
	})
}

func inside(t *testing.T, name string) {
	t.Helper()
	if !filepath.IsLocal(name) || filepath.Clean(name) != name || strings.ContainsRune(name, 0) || !Carries(name) {
		t.Fatalf("a name leaves the root or is not clean: %q", name)
	}
	for e := range strings.SplitSeq(name, "/") {
		if e == ".." || strings.HasPrefix(e, WhiteoutPrefix) {
			t.Fatalf("a name holds %q: %q", e, name)
		}
	}
}
