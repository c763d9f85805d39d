package promexpo

// NativeBound exposes a native bucket bound inside a power of two to the
// tests.
func NativeBound(schema int32, j int) float64 { return nativeBounds[schema][j] }
