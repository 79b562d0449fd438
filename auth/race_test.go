//go:build race

package auth

// raceEnabled: the race detector is on (bcrypt runs ~10x slower).
const raceEnabled = true
