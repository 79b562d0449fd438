package main

import (
	"log/slog"
	"syscall"
)

// probeMaxConns caps the probe listener's connections: kubelet and systemd
// probe with a handful; the idle ones are closed first to make room
// (limit.Conns), so a flood of idle connections never shuts a probe out.
const probeMaxConns = 128

// fdReserve is what the descriptor limit keeps beside the doors'
// connections: the database pools (per source), Keystone's client, the
// files read on requests, the runtime's own.
func fdReserve(maxOpenConns int) int { return 128 + 4*maxOpenConns }

// fitConns fits the doors' connection caps under the process's
// RLIMIT_NOFILE, read at start (Go raised its soft limit to the hard one,
// as it does on start since Go 1.19): webDoors listeners of webCap each
// (0: no cap, then each gets its share) and the probe listener's
// probeMaxConns. When they do not fit, each cap is lowered in proportion
// and the log says so: a process at its descriptor limit stops accepting on
// every door, so idle connections to one door must never take it there.
func fitConns(logger *slog.Logger, webCap, webDoors int, probe bool, maxOpenConns int) (web, probeCap int) {
	web, probeCap = webCap, 0
	if probe {
		probeCap = probeMaxConns
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		logger.Warn("reading RLIMIT_NOFILE: the doors' connection caps are not fitted under it", "err", err)
		return web, probeCap
	}
	nofile := int(min(rl.Cur, 1<<30))
	avail := nofile - fdReserve(maxOpenConns)
	// Each listener may hold one connection beyond its cap while it makes
	// room (limit.Conns.Accept), and one descriptor of its own.
	need := func(w, p int) int {
		n := webDoors * (w + 2)
		if probe {
			n += p + 2
		}
		return n
	}
	if web == 0 { // no cap asked: as many as the limit allows
		web = max(8, (avail-need(0, probeCap))/max(1, webDoors))
	}
	if n := need(web, probeCap); n > avail {
		// Scale the caps, not the listeners' own descriptors.
		scale := float64(max(avail-need(0, 0), 0)) / float64(n-need(0, 0))
		web2, probe2 := max(8, int(float64(web)*scale)), probeCap
		if probe {
			probe2 = max(4, int(float64(probeCap)*scale))
		}
		logger.Warn("connection caps lowered to fit the file descriptor limit (raise it, e.g. LimitNOFILE= or ulimit -n, for more)",
			"rlimit_nofile", nofile, "reserved", fdReserve(maxOpenConns), "web_max_connections", web2, "was", web,
			"probe_max_connections", probe2, "listeners", webDoors)
		web, probeCap = web2, probe2
	} else if webCap == 0 {
		logger.Info("--web.max-connections=0: each listener capped to fit the file descriptor limit", "rlimit_nofile", nofile, "web_max_connections", web)
	}
	return web, probeCap
}
