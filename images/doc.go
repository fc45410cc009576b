// Package images builds the container images sandboxrun runs skills in: the
// runner image (Dockerfile.runner: python3, nodejs, bash, jq, git and
// sandbox-init as the entrypoint), where no registry can be reached the
// Debian base it is built on, and one image per skill that declares packages.
//
// The base normally comes from a registry (Base, default
// debian:bookworm-slim). When it is not present locally and cannot be pulled,
// the same Debian base is bootstrapped with debootstrap from the host's own
// apt sources and loaded with `docker import`. Every image carries OCI
// annotations and an io.sandboxrun.content-hash label, so a build whose
// inputs did not change is skipped.
//
// A skill image (EnsureSkill, sandboxrun/skill-<name>:<hash>) is built FROM
// the runner: apt installs the skill's system_packages and a virtual
// environment at VenvPath gets its python_packages and the PEP 723
// dependencies of its scripts. The scripts themselves stay a read-only mount,
// so only the runner image, the package lists and the package sources decide
// when it is rebuilt. Builds of one image are serialised in this process and,
// with a lock file, across processes on the host. List and the skill-aware
// pruning of internal/skillimage find every image by its io.sandboxrun
// labels. Which options a skill's image gets (its packages with the
// operator's grants, its runner) is internal/skillimage's.
//
// Every call to the Docker engine goes through the Engine a Client is made
// with (New): a handful of image and build-container calls (package
// imageapi) implemented over the Engine API client by package
// sandbox/docker, the one package that imports that client
// (backends/dockerbackend.Images passes it in). Builds use the classic builder through the API's
// build endpoint; a skill image is a build container that is created,
// started and committed. Only tar, debootstrap and apt-get, which bootstrap
// a base without a registry, run as programs (exec.go): each gets the
// caller's context and keeps the tail of its stderr for the error.
package images
