package nova

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v2"
)

// ComputesFile is the file that gives each ironic nova-compute's own
// settings (--nova.computes-file): they are in its nova.conf, in no
// database. docs/nova-computes.md says where each installer keeps them.
//
//	computes:
//	- host: ironic-compute-0     # [DEFAULT] host
//	  cell: cell1                # optional: the cell's name or uuid
//	  conductor_group: rack1     # [ironic] conductor_group (partition_key
//	                             # before 28.0); absent: unset, "": the default group
//	  shard: s1                  # [ironic] shard (29.0+)
//	  peer_list: [ironic-compute-0, ironic-compute-1]
type ComputesFile struct {
	Computes []FileCompute `yaml:"computes"`
}

// FileCompute is one entry of the computes file.
type FileCompute struct {
	// Host is the compute's [DEFAULT] host, exactly as in its nova.conf.
	Host string `yaml:"host"`
	// Cell is the name or uuid of the compute's cell; "" matches any cell
	// with a service of that host.
	Cell           string   `yaml:"cell"`
	ConductorGroup *string  `yaml:"conductor_group"`
	Shard          string   `yaml:"shard"`
	PeerList       []string `yaml:"peer_list"`
}

// ParseComputes reads a computes file. Unknown keys, an entry without a
// host and a host given twice for the same cell are errors, each naming
// the entry.
func ParseComputes(r io.Reader, name string) (*ComputesFile, error) {
	b, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var f ComputesFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.SetStrict(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	seen := map[[2]string]int{}
	for i, c := range f.Computes {
		if strings.TrimSpace(c.Host) == "" {
			return nil, fmt.Errorf("%s: computes[%d]: no host", name, i)
		}
		k := [2]string{c.Cell, c.Host}
		if j, dup := seen[k]; dup {
			return nil, fmt.Errorf("%s: computes[%d]: host %q given again (computes[%d])", name, i, c.Host, j)
		}
		seen[k] = i
	}
	return &f, nil
}

// For returns the computes of the file that belong to cell, in the file's
// order: those whose Cell is the cell's name or uuid, and those without a
// cell whose host has a live service row in it.
func (f *ComputesFile) For(cell Cell) []Compute {
	hosts := map[string]bool{}
	for _, s := range cell.Services {
		if !s.Deleted {
			hosts[s.Host] = true
		}
	}
	var out []Compute
	taken := map[string]bool{}
	for _, c := range f.Computes {
		if taken[c.Host] {
			continue // an entry for the cell and one for any cell: the first
		}
		if c.Cell != "" && (c.Cell == cell.Name || c.Cell == cell.UUID) || c.Cell == "" && hosts[c.Host] {
			taken[c.Host] = true
			out = append(out, Compute{Host: c.Host, ConductorGroup: c.ConductorGroup, Shard: c.Shard, PeerList: c.PeerList})
		}
	}
	return out
}
