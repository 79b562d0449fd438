package novaconformance

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
)

// readerURLs are the nova_api connection and [database]connection (cell1's,
// which fills cell2's template) of reference.py's databases for suite, as a
// nova.conf holds them; "" for SQLite, whose files are inside the chroot.
func readerURLs(suite, backend string) (api, connection string) {
	prefix := "ice_nova_" + suite
	switch backend {
	case "postgresql":
		base := "postgresql+psycopg2://postgres@127.0.0.1:5432/" + prefix
		return base + "_api", base + "_cell1"
	case "mysql":
		base := "mysql+pymysql://root@127.0.0.1:3306/" + prefix
		return base + "_api?charset=utf8", base + "_cell1?charset=utf8"
	}
	return "", ""
}

// readerRun reads, through package novadb, the rows each case left in the
// databases (between reference.py's cases), for readerInput.
type readerRun struct {
	r     *novadb.Reader
	snaps map[int]*novadb.Snapshot
	// reads counts the reads, reused the second reads that reused a
	// table's rows.
	reads, reused int
}

func newReaderRun(t *testing.T, suite, backend string) *readerRun {
	api, conn := readerURLs(suite, backend)
	if api == "" {
		return nil
	}
	r, err := novadb.Open(novadb.Config{APIConnection: api, Connection: conn,
		Options: dbconn.Options{QueryTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return &readerRun{r: r, snaps: map[int]*novadb.Snapshot{}}
}

// between reads case i's rows (the hosts of its computes given as the
// settings file's), twice: the second read must reuse what the probes
// vouch for and give the same rows.
func (rr *readerRun) between(t *testing.T, cases []caseJSON) func(int, resultJSON) {
	return func(i int, _ resultJSON) {
		var hosts []string
		for _, cell := range cases[i].Cells {
			for _, c := range cell.Computes {
				hosts = append(hosts, c.Host)
			}
		}
		slices.Sort(hosts)
		hosts = slices.Compact(hosts)
		snap, err := rr.r.Read(context.Background(), hosts, nil)
		if err != nil {
			t.Fatalf("%s: novadb: %v", cases[i].Name, err)
		}
		for _, c := range snap.Cells {
			if c.Err != nil {
				t.Fatalf("%s: novadb: %v", cases[i].Name, c.Err)
			}
		}
		again, err := rr.r.Read(context.Background(), hosts, &novadb.Known{Last: snap, Window: 2 * time.Second})
		if err != nil {
			t.Fatalf("%s: novadb, second read: %v", cases[i].Name, err)
		}
		for ci, c := range again.Cells {
			if c.Err != nil || !reflect.DeepEqual(c.Cell, snap.Cells[ci].Cell) {
				t.Errorf("%s: novadb's second read of cell %s differs (error %v, reread %+v)", cases[i].Name, c.Cell.Name, c.Err, c.Reread)
			}
			if !c.Reread.ComputeNodes || !c.Reread.Instances {
				rr.reused++
			}
		}
		rr.snaps[i] = snap
		rr.reads += 2
	}
}

// cell returns the reader's rows of the cell named name in case i.
func (rr *readerRun) cell(i int, name string) (nova.Cell, error) {
	snap := rr.snaps[i]
	if snap == nil {
		return nova.Cell{}, fmt.Errorf("no read")
	}
	for _, c := range snap.Cells {
		if c.Cell.Name == name {
			return c.Cell, nil
		}
	}
	return nova.Cell{}, fmt.Errorf("novadb read no cell %q (cells: %d)", name, len(snap.Cells))
}
