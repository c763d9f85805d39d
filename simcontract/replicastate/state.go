package replicastate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// State is where a replica is in its life.
type State string

// Replica states, in the order a replica goes through them.
const (
	// StateStarting: the process runs but /health has not answered 200 yet
	// (the model is loading).
	StateStarting State = "starting"
	// StateServing: /health answered 200.
	StateServing State = "serving"
	// StateExited: the process has exited (LastExit says how); final once
	// the supervisor stops.
	StateExited State = "exited"
	// StateRestarting: waiting out the restart delay before starting again.
	StateRestarting State = "restarting"
)

// Replica is one entry of the state file.
type Replica struct {
	Index    int    `json:"index"`     // replica index, 0-based
	PID      int    `json:"pid"`       // process id of the current (or last) process; 0 before the first start
	Port     int    `json:"port"`      // TCP port it listens on (base port + Index, or the one the system picked)
	GPU      int    `json:"gpu"`       // virtual GPU index it runs on
	State    State  `json:"state"`     // starting, serving, exited or restarting
	Restarts int    `json:"restarts"`  // processes started after the first
	LastExit string `json:"last_exit"` // how the last process ended ("exit status 3", "signal: killed"); "" before any exit
}

// Read reads a state file written by Write.
func Read(path string) ([]Replica, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read state file: %w", err)
	}
	var rs []Replica
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	return rs, nil
}

// Write writes rs to path atomically: readers see the old or the new file
// whole, never a part. The file's directory must exist.
func Write(path string, rs []Replica) error {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}
