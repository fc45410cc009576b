// Package imageapi is the narrow interface package images builds through:
// the few Docker Engine calls an image build needs, in plain Go types.
// sandbox/docker implements it over the Engine API client, the one package
// that imports that client; images' tests implement it with a fake.
package imageapi
