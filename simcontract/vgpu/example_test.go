package vgpu_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

func ExampleDevice() {
	dir, err := os.MkdirTemp("", "vgpu-example-*")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// The first opener records the device's size; others may pass 0.
	d, err := vgpu.Open(dir, 0, 80*vgpu.GiB)
	if err != nil {
		panic(err)
	}
	defer d.Close()
	if err := d.Reserve(16*vgpu.GiB, "weights"); err != nil {
		panic(err)
	}
	free, _ := d.Free()
	fmt.Println("free:", vgpu.FormatSize(free))

	var re *vgpu.ReserveError
	if err := d.Reserve(70*vgpu.GiB, "kv cache"); errors.As(err, &re) {
		fmt.Printf("refused: need %s, free %s of %s\n", vgpu.FormatSize(re.Need), vgpu.FormatSize(re.Free), vgpu.FormatSize(re.Total))
	}
	// Output:
	// free: 64.0 GiB
	// refused: need 70.0 GiB, free 64.0 GiB of 80.0 GiB
}
