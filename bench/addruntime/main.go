// Command addruntime registers an OCI runtime (crun, say) in the Docker
// engine's daemon.json, leaving every other setting as it is and the default
// runtime unchanged. It only edits the file: the engine picks the runtime up
// when it reloads its configuration (SIGHUP), with no restart and running
// containers untouched. `make crun` runs it.
//
//	go run ./bench/addruntime -name crun -path /usr/bin/crun
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	name := flag.String("name", "", "runtime name, as --runtime and sandboxrun --oci-runtime will use it")
	path := flag.String("path", "", "absolute path of the runtime binary")
	config := flag.String("config", "/etc/docker/daemon.json", "the engine's configuration file")
	flag.Parse()
	changed, err := addRuntime(*config, *name, *path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "addruntime:", err)
		os.Exit(1)
	}
	if changed {
		fmt.Printf("registered runtime %s (%s) in %s; reload the engine with SIGHUP to use it\n", *name, *path, *config)
	} else {
		fmt.Printf("runtime %s (%s) is already in %s\n", *name, *path, *config)
	}
}

// addRuntime adds runtimes.<name> = {"path": path} to the JSON file config
// (created when missing) and reports whether it changed the file. A name
// already registered with another path is refused rather than replaced.
func addRuntime(config, name, path string) (bool, error) {
	if name == "" || !filepath.IsAbs(path) {
		return false, errors.New("give -name and an absolute -path")
	}
	mode := fs.FileMode(0o644)
	doc := map[string]json.RawMessage{}
	b, err := os.ReadFile(config)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, err
	default:
		if err := json.Unmarshal(b, &doc); err != nil {
			return false, fmt.Errorf("%s is not a JSON object (%w): fix it first", config, err)
		}
		if fi, err := os.Stat(config); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	// Entries are kept verbatim: newer engines have fields this does not know.
	runtimes := map[string]json.RawMessage{}
	if raw, ok := doc["runtimes"]; ok {
		if err := json.Unmarshal(raw, &runtimes); err != nil {
			return false, fmt.Errorf("%s: runtimes: %w", config, err)
		}
	}
	if raw, ok := runtimes[name]; ok {
		var rt struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(raw, &rt); err == nil && rt.Path == path {
			return false, nil
		}
		return false, fmt.Errorf("%s already names runtime %s as %s: remove it first, or pick another name", config, name, raw)
	}
	entry, err := json.Marshal(map[string]string{"path": path})
	if err != nil {
		return false, err
	}
	runtimes[name] = entry
	raw, err := json.Marshal(runtimes)
	if err != nil {
		return false, err
	}
	doc["runtimes"] = raw
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return false, err
	}
	// Written aside and renamed over: the engine never reads half a file.
	tmp, err := os.CreateTemp(filepath.Dir(config), ".daemon.json-")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(append(out, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		return false, err
	}
	return true, os.Rename(tmp.Name(), config)
}
