package catalog

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/refusal"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// ErrUploadsOff means the operator's policy does not let callers upload
// skills (skill_uploads.allow is none), or gave them nowhere to go.
var ErrUploadsOff = errors.New("skill uploads are off")

// Config is what a Catalog is opened with.
type Config struct {
	// Roots are the folders operator skills are found in, by name.
	Roots []string
	// Strict refuses skills that break an Agent Skills spec rule.
	Strict bool
	// AllowPaths lets a reference name a skill folder by path (a local,
	// trusted front end only).
	AllowPaths bool
	// Policy is the operator's policy (required): upload limits, builds.
	Policy *policy.Operator
	// SessionsRoot is the sessions root, or "": the default upload store
	// lies beside it, and no upload store may lie in it.
	SessionsRoot string
	// Warn receives what is told of a skill without refusing it; nil logs
	// it to Logger.
	Warn   func(msg string)
	Logger *slog.Logger
	// OnLoad, when set, is called at every skill load (tests count them).
	OnLoad func()
}

// Catalog finds skills for requests. It is safe for concurrent use.
type Catalog struct {
	cfg        Config
	uploads    *skillstore.Store // nil when uploads are off; uploadsErr says why
	uploadsErr error
	digests    digestCache
	builds     buildSlots
}

// Open opens the catalog: the upload store too when the policy enables
// uploads. Uploads being off is no error (Uploads says so); a store that
// cannot be opened is.
func Open(cfg Config) (*Catalog, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{cfg: cfg}
	c.uploads, c.uploadsErr = openUploads(cfg)
	if c.uploadsErr != nil && !errors.Is(c.uploadsErr, ErrUploadsOff) {
		return nil, c.uploadsErr
	}
	return c, nil
}

// Uploads is the store of uploaded skills, or an error matching
// ErrUploadsOff (and a refusal) when the policy does not enable uploads.
func (c *Catalog) Uploads() (*skillstore.Store, error) {
	if c.uploads == nil {
		return nil, c.uploadsErr
	}
	return c.uploads, nil
}

// openUploads opens the skill store when the policy enables uploads; the
// error, when it does not, is what the endpoints answer.
func openUploads(cfg Config) (*skillstore.Store, error) {
	pol := cfg.Policy
	r := pol.SkillUploads
	if !r.Enabled() {
		return nil, refused(fmt.Errorf("%w: the operator enables them with skill_uploads: {allow: tokens} in the policy", ErrUploadsOff))
	}
	root := uploadsRoot(pol, cfg.SessionsRoot)
	if root == "" {
		return nil, refused(fmt.Errorf("%w: skill_uploads has no store: set skill_uploads.store, or a sessions root (serve --sessions DIR)", ErrUploadsOff))
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, where.Errorf("skill_uploads.store %q: %w", where.Path(root), err)
	}
	if err := checkUploadsRoot(abs, r.Store.Value != "", cfg.Roots, cfg.SessionsRoot); err != nil {
		return nil, err
	}
	lim := skillstore.Limits{
		MaxUploadBytes: int64(r.MaxUploadBytes.Value),
		MaxFiles:       int(r.MaxFiles.Value),
		MaxSkills:      int(r.MaxSkillsPerToken.Value),
		MaxVersions:    int(r.MaxVersions.Value),
	}
	roots := cfg.Roots
	operatorHas := func(name string) bool {
		_, err := skill.Locate(roots, name)
		return err == nil
	}
	st, err := skillstore.Open(abs, lim, skillstore.WithReserved(operatorHas), skillstore.WithPackageCheck(packageCheck(pol)))
	if err != nil {
		return nil, fmt.Errorf("open skill_uploads.store: %w", err)
	}
	return st, nil
}

// Skills lists the operator's skills, metadata only (progressive
// disclosure: no body is read), in every layout skill.Discover knows. A
// broken skill, or a second one claiming a name, becomes an error in the
// second result and is left out of the first.
func (c *Catalog) Skills() ([]*skill.Skill, []error) {
	return skill.Discover(c.cfg.Roots...)
}

// fixedByOperator is what a remote caller is told of a broken operator
// skill in place of the CLI command that shows why: it cannot run it.
const fixedByOperator = "the server's operator has to fix the skill"

// Skill loads an operator skill whole (frontmatter and body) by name, or
// folder name, or, with Config.AllowPaths, by a path to its folder. A
// missing skill matches skill.ErrSkillNotFound; a broken one,
// skill.ErrInvalidManifest or a parse error; both are refusals. What was
// chosen for it (another skill of the name shadowed, a name that breaks a
// spec rule) goes to Config.Warn; with Config.Strict a broken spec rule
// refuses the skill.
func (c *Catalog) Skill(ref string) (*skill.Skill, error) {
	if !c.cfg.AllowPaths {
		if err := checkName(ref); err != nil {
			return nil, refused(err)
		}
	}
	if c.cfg.OnLoad != nil {
		c.cfg.OnLoad()
	}
	loc, err := skill.Locate(c.cfg.Roots, ref)
	if err != nil {
		if !errors.Is(err, skill.ErrSkillNotFound) {
			err = where.Errorf("%w (%s)", err, where.ForOperator{Operator: "run 'sandboxrun validate' on the skill for details", Others: fixedByOperator})
		}
		return nil, refused(err)
	}
	for _, w := range loc.Warnings {
		c.warn(w)
	}
	sk, err := skill.Load(loc.Dir)
	if err != nil {
		return nil, refused(where.Errorf("%w (%s)", err, where.ForOperator{Operator: "run 'sandboxrun validate " + loc.Dir + "' for details", Others: fixedByOperator}))
	}
	if c.cfg.Strict {
		if err := sk.Strict(); err != nil {
			return nil, refused(fmt.Errorf("%w (--strict refuses skills that break a spec rule; fix them, or run without --strict)", err))
		}
	}
	for _, w := range sk.Warnings() {
		c.warn(sk.Path + ": " + w)
	}
	return sk, nil
}

func (c *Catalog) warn(msg string) {
	if c.cfg.Warn != nil {
		c.cfg.Warn(msg)
		return
	}
	c.cfg.Logger.Warn(msg)
}

// checkName refuses what could make a remote caller's skill reference
// reach outside the skill roots: a path, an empty name, a control byte.
func checkName(ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("%w: the skill name is empty", skill.ErrSkillNotFound)
	case ref == "." || ref == ".." || strings.ContainsAny(ref, `/\`):
		return fmt.Errorf("%w: %q is a path; name a skill by its name (see the skill list)", skill.ErrSkillNotFound, ref)
	case len(ref) > 256 || strings.ContainsFunc(ref, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: %q is not a skill name", skill.ErrSkillNotFound, ref)
	}
	return nil
}

// refused marks err as a refusal without changing its message.
func refused(err error) error { return refusal.Mark(err) }
