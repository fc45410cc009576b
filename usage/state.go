package usage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// StateFile is the state file's name under a server's state folder.
const StateFile = "usage.json"

// stateVersion is the state file's format; another is refused.
const stateVersion = 1

// state is the state file: every tenant's counts, by label.
type state struct {
	Version int                `json:"version"`
	Tenants map[string]*tenant `json:"tenants"`
}

func windowKey(w time.Duration) string {
	return strconv.FormatInt(int64(w/time.Millisecond), 10) + "ms"
}

// readState reads a state file; a missing one is no counts yet.
func readState(path string) (map[string]*tenant, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*tenant{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read usage state: %w", err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("read usage state %s: %w (move the file aside to start counting afresh)", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("read usage state %s: version %d, this sandboxrun reads %d", path, st.Version, stateVersion)
	}
	if st.Tenants == nil {
		st.Tenants = map[string]*tenant{}
	}
	for _, t := range st.Tenants {
		if t.Windows == nil {
			t.Windows = map[string]*bucket{}
		}
		t.Total.fill()
		for _, b := range t.Windows {
			b.Used.fill()
		}
	}
	return st.Tenants, nil
}

// writeState replaces the state file whole: written to a temporary file in
// the same folder, synced, renamed over the old one and the folder synced,
// so a crash at any point leaves the old file or the new one, never half.
func writeState(path string, tenants map[string]*tenant) error {
	data, err := json.Marshal(state{Version: stateVersion, Tenants: tenants})
	if err != nil {
		return fmt.Errorf("write usage state: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write usage state: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write usage state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// ReadFile is the counts of the state file at path as a Store sees them
// (Tenant, All), for a reader beside the server (`sandboxrun usage`).
func ReadFile(path string, windows []time.Duration, quotas func(string) map[time.Duration]Limits) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("usage state: %w (give the folder serve --state uses)", err)
	}
	s, err := Open(Options{Path: path, Windows: windows, Quotas: quotas})
	if err != nil {
		return nil, err
	}
	s.o.Path = "" // a reader never writes
	return s, nil
}
