// Package vgpu is a virtual GPU memory ledger shared by processes through a
// directory, so that simulated replicas hold real (virtual) GPU memory the way
// CUDA processes hold device memory (DESIGN §5).
//
// A ledger directory holds one sub-directory per virtual GPU (DIR/gpu-I). Each
// reservation is one small file named after the process that holds it: its pid,
// its start time from /proc/PID/stat (so that a reused pid does not inherit a
// dead process's memory) and its size. Reservations of processes that are gone
// (or are zombies, whose memory a real driver has already freed) do not count
// and are swept by the next reserver. Check-and-reserve is atomic across
// processes: it runs under an exclusive flock on DIR/gpu-I/lock. The device's
// capacity is recorded in DIR/gpu-I/capacity by the first opener; a later
// opener that names another capacity gets a *CapacityError.
//
// Free needs no lock: it lists the directory and checks each holder's /proc
// entry, which is cheap enough for a replica that re-reads it every 100 ms.
//
// Balloon is the small interface behind which memory is held on behalf of a
// fault; LedgerBalloon implements it on a Device, and a CUDA backend can
// implement it on a real GPU. The ledger relies on /proc, so it works on Linux
// and only among processes of one pid namespace.
package vgpu
