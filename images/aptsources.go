package images

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// aptSource is one (URI, suite) pair of a `deb` entry in the host's apt
// configuration.
type aptSource struct {
	URI        string
	Suite      string
	Components []string
	// SignedBy is the keyring file named by the entry, when it names one.
	SignedBy string
	// File is where the entry came from, for messages.
	File string
}

// errNoArchive means no entry in the host's apt sources can seed debootstrap.
var errNoArchive = errors.New("no usable Debian archive in the host's apt sources")

// hostAptSources reads the apt source files under root the way apt does:
// etc/apt/sources.list, then etc/apt/sources.list.d/*.list (one-line format)
// and *.sources (deb822) in lexical order. Other files there (.save,
// .disabled, ...) are ignored, as apt ignores them.
func hostAptSources(root string) (sources []aptSource, read []string, err error) {
	files := []string{filepath.Join(root, "etc/apt/sources.list")}
	dir := filepath.Join(root, "etc/apt/sources.list.d")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, where.Errorf("reading %s: %w", where.Path(dir), err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".list") || strings.HasSuffix(e.Name(), ".sources")) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		files = append(files, filepath.Join(dir, n))
	}
	for _, f := range files {
		got, err := readAptFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, read, err
		}
		read = append(read, f)
		sources = append(sources, got...)
	}
	return sources, read, nil
}

func readAptFile(path string) ([]aptSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var got []aptSource
	if strings.HasSuffix(path, ".sources") {
		got, err = parseDeb822Sources(f, path)
	} else {
		got, err = parseOneLineSources(f, path)
	}
	if err != nil {
		return nil, where.Errorf("reading apt sources %s: %w", where.Path(path), err)
	}
	return got, nil
}

// parseOneLineSources reads the classic format:
//
//	deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://deb.debian.org/debian bookworm main
//
// Only `deb` lines are returned; deb-src and malformed lines are skipped, as
// apt itself would refuse to use them for binaries.
func parseOneLineSources(r io.Reader, file string) ([]aptSource, error) {
	var out []aptSource
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		var opts []string
		if strings.HasPrefix(fields[0], "[") {
			// Options run to the token that ends with "]"; "[ arch=x ]"
			// with spaces is legal too.
			end := -1
			for i, f := range fields {
				if strings.HasSuffix(f, "]") {
					end = i
					break
				}
			}
			if end < 0 {
				continue
			}
			joined := strings.Join(fields[:end+1], " ")
			opts = strings.Fields(strings.Trim(joined, "[]"))
			fields = fields[end+1:]
		}
		if len(fields) < 2 || strings.HasPrefix(fields[0], "cdrom:") {
			// cdrom URIs may contain spaces ("cdrom:[Debian GNU/Linux]/")
			// and cannot seed debootstrap anyway.
			continue
		}
		src := aptSource{URI: fields[0], Suite: fields[1], Components: fields[2:], File: file}
		for _, o := range opts {
			if k, v, ok := strings.Cut(o, "="); ok && strings.EqualFold(k, "signed-by") {
				src.SignedBy = v
			}
		}
		out = append(out, src)
	}
	return out, sc.Err()
}

// parseDeb822Sources reads the deb822 format: stanzas separated by blank
// lines, "Key: value" fields (keys case-insensitive), continuation lines
// starting with white space, and "#" comment lines that do not end a stanza.
// Every URI × suite pair of an enabled stanza whose Types include deb is
// returned.
func parseDeb822Sources(r io.Reader, file string) ([]aptSource, error) {
	var out []aptSource
	stanza := map[string]string{}
	lastKey := ""
	flush := func() {
		defer func() { stanza = map[string]string{}; lastKey = "" }()
		if strings.EqualFold(strings.TrimSpace(stanza["enabled"]), "no") {
			return
		}
		if !containsFold(strings.Fields(stanza["types"]), "deb") {
			return
		}
		signedBy := strings.TrimSpace(stanza["signed-by"])
		if strings.ContainsAny(signedBy, "\n") || strings.HasPrefix(signedBy, "-----BEGIN") {
			signedBy = "" // an inline key block, not a keyring file
		}
		comps := strings.Fields(stanza["components"])
		for _, uri := range strings.Fields(stanza["uris"]) {
			for _, suite := range strings.Fields(stanza["suites"]) {
				out = append(out, aptSource{URI: uri, Suite: suite, Components: comps, SignedBy: signedBy, File: file})
			}
		}
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if len(stanza) > 0 {
				flush()
			}
		case strings.HasPrefix(line, "#"):
			// comment: neither a field nor a stanza break
		case line[0] == ' ' || line[0] == '\t':
			if lastKey != "" {
				stanza[lastKey] += "\n" + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				return nil, fmt.Errorf("line %q is neither a field nor a comment", line)
			}
			lastKey = strings.ToLower(strings.TrimSpace(k))
			stanza[lastKey] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(stanza) > 0 {
		flush()
	}
	return out, nil
}

// pickArchive chooses the entry debootstrap starts from: the first one with
// the main component whose suite is a release (not -security, -updates,
// -backports, which are overlays debootstrap cannot start from) served over
// a scheme debootstrap speaks.
func pickArchive(sources []aptSource) (aptSource, error) {
	for _, s := range sources {
		if usableArchive(s) {
			return s, nil
		}
	}
	return aptSource{}, errNoArchive
}

func usableArchive(s aptSource) bool {
	u, err := url.Parse(s.URI)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "http", "https", "ftp", "file":
	default:
		return false // cdrom:, mirror+file:, tor+http: ... debootstrap cannot fetch from these
	}
	if s.Suite == "" || strings.Contains(s.Suite, "/") || !isTagComponent(s.Suite) {
		return false // flat repositories ("./") have no dists/ to bootstrap from
	}
	for _, overlay := range []string{"-security", "-updates", "-backports", "-proposed-updates", "-proposed"} {
		if strings.HasSuffix(s.Suite, overlay) {
			return false
		}
	}
	return containsFold(s.Components, "main")
}

// isTagComponent reports whether s can be an image tag (the bootstrapped
// base is tagged sandboxrun/base:<suite>).
func isTagComponent(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

func containsFold(list []string, want string) bool {
	for _, s := range list {
		if strings.EqualFold(s, want) {
			return true
		}
	}
	return false
}
