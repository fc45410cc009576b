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
	remove := flag.Bool("remove", false, "take the runtime out again (when it was registered with this -path)")
	flag.Parse()
	if *remove {
		changed, err := removeRuntime(*config, *name, *path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "addruntime:", err)
			os.Exit(1)
		}
		if changed {
			fmt.Printf("removed runtime %s from %s; reload the engine with SIGHUP\n", *name, *config)
		}
		return
	}
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

// runtimeEntry is how an engine's daemon.json names a runtime's binary.
type runtimeEntry struct {
	Path string `json:"path"`
}

// addRuntime adds runtimes.<name> = {"path": path} to the JSON file config
// (created when missing) and reports whether it changed the file. A name
// already registered with another path is refused rather than replaced.
func addRuntime(config, name, path string) (bool, error) {
	if name == "" || !filepath.IsAbs(path) {
		return false, errors.New("give -name and an absolute -path")
	}
	doc, runtimes, mode, err := readConfig(config)
	if err != nil {
		return false, err
	}
	if raw, ok := runtimes[name]; ok {
		var rt runtimeEntry
		if err := json.Unmarshal(raw, &rt); err == nil && rt.Path == path {
			return false, nil
		}
		return false, fmt.Errorf("%s already names runtime %s as %s: remove it first, or pick another name", config, name, raw)
	}
	entry, err := json.Marshal(runtimeEntry{Path: path})
	if err != nil {
		return false, err
	}
	runtimes[name] = entry
	return true, writeConfig(config, doc, runtimes, mode)
}

// removeRuntime takes runtimes.<name> out of config when it names path,
// and reports whether it changed the file.
func removeRuntime(config, name, path string) (bool, error) {
	doc, runtimes, mode, err := readConfig(config)
	if err != nil {
		return false, err
	}
	var rt runtimeEntry
	if raw, ok := runtimes[name]; !ok || json.Unmarshal(raw, &rt) != nil || rt.Path != path {
		return false, nil // not ours to remove
	}
	delete(runtimes, name)
	return true, writeConfig(config, doc, runtimes, mode)
}

// readConfig reads the engine's configuration, keeping every entry
// verbatim: newer engines have fields this does not know.
func readConfig(config string) (doc, runtimes map[string]json.RawMessage, mode fs.FileMode, err error) {
	doc, runtimes, mode = map[string]json.RawMessage{}, map[string]json.RawMessage{}, 0o644
	b, err := os.ReadFile(config)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return doc, runtimes, mode, nil
	case err != nil:
		return nil, nil, 0, err
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, 0, fmt.Errorf("%s is not a JSON object (%w): fix it first", config, err)
	}
	if fi, err := os.Stat(config); err == nil {
		mode = fi.Mode().Perm()
	}
	if raw, ok := doc["runtimes"]; ok {
		if err := json.Unmarshal(raw, &runtimes); err != nil {
			return nil, nil, 0, fmt.Errorf("%s: runtimes: %w", config, err)
		}
	}
	return doc, runtimes, mode, nil
}

// writeConfig writes doc with runtimes aside and renames it over config:
// the engine never reads half a file.
func writeConfig(config string, doc, runtimes map[string]json.RawMessage, mode fs.FileMode) error {
	delete(doc, "runtimes")
	if len(runtimes) > 0 {
		raw, err := json.Marshal(runtimes)
		if err != nil {
			return err
		}
		doc["runtimes"] = raw
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(config), ".daemon.json-")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, werr := tmp.Write(append(out, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), config)
}
