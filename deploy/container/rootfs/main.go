// Command rootfs writes the base layer of the release image as a tar
// archive, which deploy/container/Containerfile.release ADDs onto scratch:
//
//	go run ./deploy/container/rootfs -o rootfs.tar
//
// The image is built with no registry: CI reaches only the Go module proxy
// and Debian, and a base image (distroless, Debian's) would have to be
// pulled. Everything the static binary needs from a filesystem is small
// enough to write here, the same bytes on every machine:
//
//   - /etc/passwd and /etc/group with root and nonroot (65532, distroless'
//     numbers, which runAsNonRoot and the manifests use);
//   - /etc/ssl/certs/ca-certificates.crt, Mozilla's roots as the Go team
//     ships them (golang.org/x/crypto/x509roots/fallback/bundle, pinned in
//     go.mod), for TLS to PostgreSQL, MySQL and Keystone; roots NSS
//     constrains with a distrust-after date are left out, a PEM file having
//     no way to say so;
//   - /tmp, mode 1777: the demo's SQLite database and Go's os.TempDir;
//   - /home/nonroot, 0700, owned by 65532.
//
// Modification times are SOURCE_DATE_EPOCH (0 when unset), so the layer's
// digest changes only when its content does.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NonRoot is the unprivileged user and group the image runs as.
const NonRoot = 65532

type entry struct {
	name string
	mode int64
	uid  int
	dir  bool
	data []byte
}

// Entries is the base layer's content, in the order it is written.
func Entries() []entry {
	var certs bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&certs, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot))},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRoot))},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs.Bytes()},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: NonRoot, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
	}
}

// Write writes the entries as a tar archive with every time set to mtime.
func Write(w io.Writer, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range Entries() {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime,
			Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data)),
		}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func main() {
	out := flag.String("o", "rootfs.tar", "the archive to write")
	flag.Parse()
	mtime := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rootfs: SOURCE_DATE_EPOCH=%q: %v\n", s, err)
			os.Exit(2)
		}
		mtime = time.Unix(sec, 0).UTC()
	}
	var buf bytes.Buffer
	if err := Write(&buf, mtime); err != nil {
		fmt.Fprintf(os.Stderr, "rootfs: %v\n", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "rootfs: %v\n", err)
		os.Exit(1)
	}
}
