package images

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// Engine is what this package needs of a Docker engine (imageapi.Engine):
// every image and build-container call goes through it. This package links
// no engine client: the Docker backend (backends/dockerbackend, which
// backends.New uses) registers the Engine API client of sandbox/docker, the
// one package that imports it; tests set a fake with useEngine.
type Engine = imageapi.Engine

var (
	engineMu sync.Mutex
	current  Engine
	connect  func() (Engine, error)
)

// RegisterEngine sets how the first image call connects to the engine.
// The Docker backend calls it when it is linked, so a program that embeds
// only another backend links no Docker client through this package.
func RegisterEngine(dial func() (Engine, error)) {
	engineMu.Lock()
	defer engineMu.Unlock()
	connect = dial
}

// engine returns the Engine to use, connecting on first use.
func engine() (Engine, error) {
	engineMu.Lock()
	defer engineMu.Unlock()
	if current != nil {
		return current, nil
	}
	if connect == nil {
		return nil, fmt.Errorf("%w: no image engine is linked into this program: import github.com/sandboxrun/sandboxrun/backends/dockerbackend (or backends), which registers the Docker engine", ErrNoDocker)
	}
	api, err := connect()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDocker, err)
	}
	current = api
	return current, nil
}

// useEngine makes e the Engine until the returned function restores the
// one before.
func useEngine(e Engine) (restore func()) {
	engineMu.Lock()
	defer engineMu.Unlock()
	prev := current
	current = e
	return func() {
		engineMu.Lock()
		defer engineMu.Unlock()
		current = prev
	}
}

// isNotFound reports whether the engine said an image or container does
// not exist.
func isNotFound(err error) bool { return errors.Is(err, imageapi.ErrNotFound) }

// ShortID is an image or container ID as people read it: 12 hex digits
// without the algorithm.
func ShortID(id string) string {
	if i := len("sha256:"); len(id) > i && id[:i] == "sha256:" {
		id = id[i:]
	}
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}
