package images

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// Engine is what this package needs of a Docker engine (imageapi.Engine):
// every image and build-container call goes through it. This package links
// no engine client: the caller passes one in (backends/dockerbackend.Images
// makes the Client over sandbox/docker's Engine API client); tests pass a
// fake.
type Engine = imageapi.Engine

// Client builds, finds and removes sandboxrun's images on one engine. It
// connects on first use, so making one never waits for the daemon. It is
// safe for concurrent use.
type Client struct {
	dial func() (Engine, error)

	mu sync.Mutex
	e  Engine
}

// New returns a Client that connects to its engine with dial on first use;
// a dial error is reported, matching ErrNoDocker, by the call that needed
// the engine, and the next call dials again.
func New(dial func() (Engine, error)) *Client {
	return &Client{dial: dial}
}

// engine returns the Engine to use, connecting on first use.
func (c *Client) engine() (Engine, error) {
	if c == nil || c.dial == nil {
		return nil, fmt.Errorf("%w: no image engine configured: pass one (backends/dockerbackend.Images gives the Docker engine's)", ErrNoDocker)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.e != nil {
		return c.e, nil
	}
	api, err := c.dial()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDocker, err)
	}
	c.e = api
	return c.e, nil
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
