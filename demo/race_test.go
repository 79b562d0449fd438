//go:build race

package demo

func init() { raceBuild = true }
