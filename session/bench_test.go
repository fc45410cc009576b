package session

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPutFile measures upload throughput (temp file, fsync, rename).
func BenchmarkPutFile(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s := openStore(b, Limits{})
			id := create(b, s)
			data := bytes.Repeat([]byte("x"), size)
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := s.PutFile(owner, id, "f", bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenFile measures download throughput (hash for the ETag, then
// the bytes).
func BenchmarkOpenFile(b *testing.B) {
	s := openStore(b, Limits{})
	id := create(b, s)
	const size = 16 << 20
	put(b, s, id, "f", string(bytes.Repeat([]byte("x"), size)))
	b.SetBytes(size)
	for b.Loop() {
		rc, _, err := s.OpenFile(owner, id, "f")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, rc)
		rc.Close()
	}
}

// BenchmarkLease measures what a session adds to a run: Acquire, then
// Release with its recount walk, for workspaces of 0, 100 and 5000 files.
func BenchmarkLease(b *testing.B) {
	for _, n := range []int{0, 100, 5000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			s := openStore(b, Limits{})
			id := create(b, s)
			for i := range n {
				dir := filepath.Join(wsPath(s, id), fmt.Sprintf("d%d", i%50))
				_ = os.MkdirAll(dir, 0o755)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), []byte("data"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				l, err := s.Acquire(b.Context(), owner, id)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
}

// BenchmarkListFiles measures a listing (every file hashed).
func BenchmarkListFiles(b *testing.B) {
	s := openStore(b, Limits{})
	id := create(b, s)
	for i := range 1000 {
		put(b, s, id, fmt.Sprintf("d%d/f%d", i%20, i), "some data")
	}
	for b.Loop() {
		if _, err := s.ListFiles(owner, id, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFolderListFiles measures a host folder's listing (no hashing)
// of 1000 files of 64 KiB, next to the store's listing of the same files
// (every file hashed): what leaving the hash out saves on a project.
func BenchmarkFolderListFiles(b *testing.B) {
	data := string(bytes.Repeat([]byte("x"), 64<<10))
	b.Run("folder", func(b *testing.B) {
		f := openFolder(b, b.TempDir(), Limits{}, true)
		for i := range 1000 {
			if _, err := f.PutFile(fmt.Sprintf("d%d/f%d", i%20, i), bytes.NewReader([]byte(data))); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if _, err := f.ListFiles(""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store", func(b *testing.B) {
		s := openStore(b, Limits{}, withoutSync())
		id := create(b, s)
		for i := range 1000 {
			put(b, s, id, fmt.Sprintf("d%d/f%d", i%20, i), data)
		}
		for b.Loop() {
			if _, err := s.ListFiles(owner, id, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFolderPutFile measures a host folder's upload (temp file,
// fsync, rename), the store's path without the accounting.
func BenchmarkFolderPutFile(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			f := openFolder(b, b.TempDir(), Limits{}, true)
			data := bytes.Repeat([]byte("x"), size)
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := f.PutFile("f", bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
