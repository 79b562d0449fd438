package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NovaChroots is where conformance/nova/chroots.sh keeps the chroots with
// Debian's python3-nova ($NOVA_CHROOT_CACHE, as the script reads it).
var NovaChroots = EnvOr("NOVA_CHROOT_CACHE", "/var/cache/ironic-conductor-exporter/nova-chroots")

// NovaSuites are the Debian suites of the Nova conformance, oldest first
// ($ICE_NOVA_SUITES, space-separated, to run fewer).
func NovaSuites() []string {
	return strings.Fields(EnvOr("ICE_NOVA_SUITES", "bookworm trixie sid"))
}

// NovaChroot is the chroot of suite with python3-nova (ready: its stamp
// written by conformance/nova/chroots.sh), and root to enter it.
func NovaChroot(suite string) Dep {
	return dep("the "+suite+" chroot with python3-nova",
		"run conformance/nova/chroots.sh "+suite+" as root (make provision builds the chroots)",
		func() error {
			if os.Geteuid() != 0 {
				return errors.New("entering a chroot needs root")
			}
			if _, err := chrootPath(); err != nil {
				return err
			}
			_, err := NovaVersion(suite)
			return err
		})
}

// chrootPath is chroot(8) from PATH, else from /usr/sbin or /sbin, which a
// user's PATH often lacks (coreutils installs it there).
func chrootPath() (string, error) {
	if p, err := exec.LookPath("chroot"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/chroot", "/sbin/chroot"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("chroot is neither in PATH nor in /usr/sbin or /sbin (Debian's coreutils)")
}

// Chroot is the command running args in the chroot root, with chroot(8)
// found as chrootPath finds it (NovaChroot checked it is there).
func Chroot(root string, args ...string) *exec.Cmd {
	p, err := chrootPath()
	if err != nil {
		p = "chroot" // exec then says it is missing
	}
	return exec.Command(p, append([]string{root}, args...)...)
}

// NovaChrootDir is the directory of suite's chroot.
func NovaChrootDir(suite string) string { return filepath.Join(NovaChroots, suite) }

// NovaVersion is the python3-nova version installed in suite's chroot
// (Debian's spelling, "2:26.2.2-1~deb12u4"), from its stamp.
func NovaVersion(suite string) (string, error) {
	b, err := os.ReadFile(filepath.Join(NovaChrootDir(suite), ".nova-conformance-ready"))
	if err != nil {
		return "", fmt.Errorf("no ready chroot: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
