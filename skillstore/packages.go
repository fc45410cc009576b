package skillstore

import (
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/skill"
)

// WithPackageCheck has each upload that declares packages (python_packages,
// system_packages, its scripts' PEP 723 dependencies) judged by check,
// whose error refuses it: the server's policy on building images for
// uploads. An upload whose declaration cannot be read is refused as
// invalid, named as its uploader knows its files.
func WithPackageCheck(check func(name string, deps skill.Deps) error) Option {
	return func(s *Store) { s.packages = check }
}

// checkPackages applies the package check to the staged skill dir.
func (s *Store) checkPackages(dir, name string) error {
	if s.packages == nil {
		return nil
	}
	sk, err := skill.LoadMeta(dir)
	if err == nil {
		var deps skill.Deps
		if deps, err = sk.Dependencies(); err == nil {
			if deps.Empty() {
				return nil
			}
			return s.packages(name, deps)
		}
	}
	return &InvalidError{Name: name, Errors: []string{where.Render(err, uploadNames(dir, name))}}
}
