// Command generate writes the dashboards of package dashboards as JSON
// files into the current directory (or the directory given as the only
// argument). `go generate ./dashboards` runs it in dashboards/.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dashboards"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	dir := "."
	switch len(args) {
	case 0:
	case 1:
		dir = args[0]
	default:
		return fmt.Errorf("usage: generate [directory]")
	}
	files, err := dashboards.Generate()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", filepath.Join(dir, name))
	}
	return nil
}
