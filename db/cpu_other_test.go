//go:build !linux

package db

import (
	"errors"
	"time"
)

var errNoCPU = errors.New("CPU times are read on Linux only")

func processCPU() (time.Duration, error)      { return 0, errNoCPU }
func threadCPU(uint32) (time.Duration, error) { return 0, errNoCPU }
