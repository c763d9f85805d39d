//go:build !cuda

package gpu

import "context"

// OpenCUDABalloon would open a balloon on a real GPU; this build has no
// cuda backend, so it returns ErrNoCUDABuild.
func OpenCUDABalloon(context.Context, int) (CUDABalloon, error) {
	return nil, ErrNoCUDABuild
}
