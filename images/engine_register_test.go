package images

import dockerapi "github.com/sandboxrun/sandboxrun/sandbox/docker"

// This package's tests that reach a real engine (the build integration
// tests) use the Docker backend's client, as a program linking
// backends/dockerbackend does.
func init() {
	RegisterEngine(func() (Engine, error) {
		api, err := dockerapi.NewImageAPI()
		if err != nil {
			return nil, err
		}
		return api, nil
	})
}
