//go:build !nvml || !cgo

package gpu

// openSource has no NVML to open in this build.
func openSource(string) (source, error) { return nil, ErrNoNVMLBuild }
