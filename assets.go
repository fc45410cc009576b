package sandboxrun

import _ "embed" // Dockerfile.runner travels inside the binary

// RunnerDockerfile is Dockerfile.runner, so an installed sandboxrun can build
// its runner image without the source tree.
//
//go:embed Dockerfile.runner
var RunnerDockerfile []byte
