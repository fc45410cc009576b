package skillstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/fsmode"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// DigestPrefix starts every skill digest.
const DigestPrefix = "sha256:"

// Digest is the digest of the skill folder dir by the rule in the package
// documentation: "sha256:" and 64 hex digits. Links are not followed;
// anything but files, folders and links (a fifo, a socket) is an error.
func Digest(dir string) (string, error) {
	var recs []record
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		r, err := recordOf(p, filepath.ToSlash(rel), d)
		if err != nil {
			return err
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return "", where.Errorf("digest of %s: %w", where.Path(dir), err)
	}
	return digestOf(recs), nil
}

// record is one line of the canonical listing.
type record struct {
	kind byte
	mode string
	sum  string
	path string
}

func recordOf(full, rel string, d fs.DirEntry) (record, error) {
	switch t := d.Type(); {
	case t.IsDir():
		return record{kind: 'd', mode: "755", sum: "-", path: rel}, nil
	case t&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return record{}, err
		}
		return record{kind: 'l', mode: "777", sum: sumOf(strings.NewReader(target)), path: rel}, nil
	case t.IsRegular():
		fi, err := d.Info()
		if err != nil {
			return record{}, err
		}
		f, err := os.Open(full)
		if err != nil {
			return record{}, err
		}
		defer func() { _ = f.Close() }()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return record{}, err
		}
		return record{kind: 'f', mode: fmt.Sprintf("%o", fileMode(int64(fi.Mode().Perm()))), sum: hex.EncodeToString(h.Sum(nil)), path: rel}, nil
	default:
		return record{}, fmt.Errorf("%s is %s, not a file, folder or link: a skill holds only those, so remove it", rel, fsmode.Describe(t))
	}
}

func sumOf(r io.Reader) string {
	h := sha256.New()
	_, _ = io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil))
}

// digestOf hashes the listing in path order.
func digestOf(recs []record) string {
	sort.Slice(recs, func(i, j int) bool { return recs[i].path < recs[j].path })
	h := sha256.New()
	for _, r := range recs {
		_, _ = fmt.Fprintf(h, "%c %s %s %s\x00", r.kind, r.mode, r.sum, r.path)
	}
	return DigestPrefix + hex.EncodeToString(h.Sum(nil))
}

// hexOf is a digest's hex part, or "" when d is not a well-formed digest.
func hexOf(d string) string {
	h, ok := strings.CutPrefix(d, DigestPrefix)
	if !ok || len(h) != 64 {
		return ""
	}
	if _, err := hex.DecodeString(h); err != nil || strings.ToLower(h) != h {
		return ""
	}
	return h
}
