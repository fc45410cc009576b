package oci

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	ispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// images keeps unpacked images under the state folder: images/<id>/ is the
// root file system of the image whose config digest (the engine's image
// id) is sha256:<id>, and refs/<escaped ref> names the id a reference
// stands for. An image is unpacked once; runs only read it.
type images struct {
	dir, refs string
	mu        sync.Mutex // serialises unpacking
}

func newImages(state string) *images {
	return &images{dir: filepath.Join(state, "images"), refs: filepath.Join(state, "refs")}
}

// rootfs returns the unpacked root file system of ref and the image id.
func (s *images) rootfs(ref string) (dir, id string, err error) {
	b, err := os.ReadFile(filepath.Join(s.refs, url.PathEscape(ref)))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("%w: %s is not unpacked for the oci backend: unpack it once: sandboxrun images unpack %s (from the Docker engine, or --from an OCI image layout or docker save tarball)", sandbox.ErrImageNotFound, ref, ref)
	}
	if err != nil {
		return "", "", fmt.Errorf("look up image %s: %w", ref, err)
	}
	id = strings.TrimSpace(string(b))
	hexID, ok := strings.CutPrefix(id, "sha256:")
	if !ok || !validHex(hexID) {
		return "", "", fmt.Errorf("%w: %s names %q, not an image id: unpack it again", sandbox.ErrImageNotFound, ref, id)
	}
	dir = filepath.Join(s.dir, hexID)
	if _, err := os.Stat(dir); err != nil { //nolint:gosec // dir is images/ and a checked hex digest
		return "", "", fmt.Errorf("%w: %s names image %s, whose root file system is gone: import it again: %w", sandbox.ErrImageNotFound, ref, id, err)
	}
	return dir, id, nil
}

// Import unpacks the image ref from source, an OCI image layout (a folder)
// or a `docker save` tarball (a file), into a root file system under the
// state folder, unless an image with the same id is there already, and
// records ref as its name. It returns the image id. With the image
// imported, runs of ref need nothing but the runtime.
func (r *Runner) Import(ctx context.Context, ref, source string) (string, error) {
	img, err := openImage(ref, source)
	if err != nil {
		return "", err
	}
	cfg, err := img.ConfigName()
	if err != nil {
		return "", fmt.Errorf("read image %s from %s: %w", ref, source, err)
	}
	id := cfg.String()
	if err := r.images.unpack(ctx, img, cfg.Hex); err != nil {
		return "", fmt.Errorf("unpack image %s: %w", ref, err)
	}
	if err := writeAtomically(filepath.Join(r.images.refs, url.PathEscape(ref)), []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("name image %s: %w", ref, err)
	}
	return id, nil
}

// openImage reads ref from an OCI layout folder (the manifest annotated
// with ref, or its only one) or from a docker save tarball.
func openImage(ref, source string) (v1.Image, error) {
	fi, err := os.Stat(source)
	if err != nil {
		return nil, fmt.Errorf("image source: %w", err)
	}
	if !fi.IsDir() {
		tag, err := name.NewTag(ref)
		if err != nil {
			return nil, fmt.Errorf("image reference %q: %w", ref, err)
		}
		img, err := tarball.ImageFromPath(source, &tag)
		if err != nil {
			return nil, fmt.Errorf("read %s from tarball %s: %w", ref, source, err)
		}
		return img, nil
	}
	idx, err := layout.ImageIndexFromPath(source)
	if err != nil {
		return nil, fmt.Errorf("read OCI layout %s: %w", source, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read OCI layout %s: %w", source, err)
	}
	var pick *v1.Descriptor
	for i, d := range m.Manifests {
		if d.Annotations[ispec.AnnotationRefName] == ref || d.Annotations["io.containerd.image.name"] == ref {
			pick = &m.Manifests[i]
			break
		}
	}
	if pick == nil && len(m.Manifests) == 1 {
		pick = &m.Manifests[0]
	}
	if pick == nil {
		return nil, fmt.Errorf("OCI layout %s holds no image named %s (and more than one image)", source, ref)
	}
	img, err := idx.Image(pick.Digest)
	if err != nil {
		return nil, fmt.Errorf("read %s from OCI layout %s: %w", ref, source, err)
	}
	return img, nil
}

// unpack flattens img's layers into images/<hex>, through a temporary
// folder renamed into place, so a crash never leaves half an image under
// its id.
func (s *images) unpack(ctx context.Context, img v1.Image, hex string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	final := filepath.Join(s.dir, hex)
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, ".unpack-"+hex+"-"+randomSuffix())
	if err := os.Mkdir(tmp, 0o755); err != nil { //nolint:gosec // the sandbox user reads the image
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	flat := mutate.Extract(img)
	defer flat.Close()
	if err := untar(ctx, flat, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

// validHex is a sha256 digest in hex: the only names under images/.
func validHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeAtomically replaces path with data through a temporary file and a
// rename.
func writeAtomically(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp-" + randomSuffix()
	if err := os.WriteFile(tmp, data, 0o644); err != nil { //nolint:gosec // readable: bound into sandboxes
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// copyN copies with ctx checked between chunks, so a huge layer can be
// given up.
func copyCtx(ctx context.Context, w io.Writer, r io.Reader) error {
	buf := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
