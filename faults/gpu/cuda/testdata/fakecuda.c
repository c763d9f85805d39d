/*
 * fakecuda.c: a stand-in for libcuda.so.1 with the few CUDA driver API entry
 * points the balloon uses, for tests on machines without a GPU. It allocates
 * nothing: it books device memory as a driver would (2 MiB granularity, a
 * context overhead) and enforces what a real driver enforces that the Go
 * side could get wrong: calls need a context current ON THE CALLING THREAD,
 * frees must name live allocations, and memory beyond the device's size is
 * refused with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Knobs (environment, read at cuInit):
 *   FAKECUDA_TOTAL_MIB      device size (default 8192)
 *   FAKECUDA_MAX_ALLOC_MIB  largest single allocation that succeeds, to act
 *                           out fragmentation (default: no limit)
 *   FAKECUDA_INIT_RESULT    what cuInit returns (default 0; 100 = no device)
 *
 * Build: gcc -shared -fPIC -O1 -o libcuda.so.1 fakecuda.c -lpthread
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef uintptr_t CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201,
};

#define MIB (1024ULL * 1024ULL)
#define GRAIN (2 * MIB)
#define CTX_OVERHEAD (256 * MIB)
#define MAX_ALLOCS 65536

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static unsigned long long total_bytes, used_bytes, max_alloc;
static CUdeviceptr next_ptr = 0x7f0000000000ULL;
static CUdeviceptr ptrs[MAX_ALLOCS];
static unsigned long long sizes[MAX_ALLOCS];
static int live_contexts;
static CUcontext next_ctx = 0x1000;
static __thread CUcontext current;

static unsigned long long env_mib(const char *name, unsigned long long def) {
	const char *v = getenv(name);
	return v && *v ? strtoull(v, 0, 10) * MIB : def;
}

CUresult cuInit(unsigned int flags) {
	const char *r = getenv("FAKECUDA_INIT_RESULT");
	if (flags != 0)
		return INVALID_VALUE;
	if (r && *r && atoi(r) != 0)
		return atoi(r);
	pthread_mutex_lock(&mu);
	if (!initialized) {
		total_bytes = env_mib("FAKECUDA_TOTAL_MIB", 8192 * MIB);
		max_alloc = env_mib("FAKECUDA_MAX_ALLOC_MIB", 0);
		initialized = 1;
	}
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
	if (!initialized)
		return NOT_INITIALIZED;
	*count = 1;
	return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
	if (!initialized)
		return NOT_INITIALIZED;
	if (ordinal != 0)
		return INVALID_DEVICE;
	*dev = 0;
	return SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
	if (dev != 0)
		return INVALID_DEVICE;
	strncpy(name, "Fake GPU", (size_t)len);
	if (len > 0)
		name[len - 1] = 0;
	return SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
	if (dev != 0)
		return INVALID_DEVICE;
	*bytes = (size_t)total_bytes;
	return SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice dev) {
	(void)flags;
	if (!initialized)
		return NOT_INITIALIZED;
	if (dev != 0)
		return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	if (used_bytes + CTX_OVERHEAD > total_bytes) {
		pthread_mutex_unlock(&mu);
		return OUT_OF_MEMORY;
	}
	used_bytes += CTX_OVERHEAD;
	live_contexts++;
	*ctx = next_ctx++;
	pthread_mutex_unlock(&mu);
	current = *ctx;
	return SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
	current = ctx;
	return SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
	if (ctx == 0)
		return INVALID_CONTEXT;
	pthread_mutex_lock(&mu);
	if (live_contexts == 0) {
		pthread_mutex_unlock(&mu);
		return INVALID_CONTEXT;
	}
	live_contexts--;
	used_bytes -= CTX_OVERHEAD;
	for (int i = 0; i < MAX_ALLOCS; i++) { /* destroying a context frees its memory */
		if (ptrs[i]) {
			used_bytes -= sizes[i];
			ptrs[i] = 0;
		}
	}
	pthread_mutex_unlock(&mu);
	if (current == ctx)
		current = 0;
	return SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
	if (!current)
		return INVALID_CONTEXT;
	pthread_mutex_lock(&mu);
	*free_bytes = (size_t)(total_bytes - used_bytes);
	*total = (size_t)total_bytes;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
	if (!current)
		return INVALID_CONTEXT;
	if (size == 0)
		return INVALID_VALUE;
	unsigned long long booked = (size + GRAIN - 1) / GRAIN * GRAIN;
	pthread_mutex_lock(&mu);
	if ((max_alloc && size > max_alloc) || used_bytes + booked > total_bytes) {
		pthread_mutex_unlock(&mu);
		return OUT_OF_MEMORY;
	}
	for (int i = 0; i < MAX_ALLOCS; i++) {
		if (!ptrs[i]) {
			ptrs[i] = next_ptr;
			sizes[i] = booked;
			next_ptr += booked;
			used_bytes += booked;
			*dptr = ptrs[i];
			pthread_mutex_unlock(&mu);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
	if (!current)
		return INVALID_CONTEXT;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_ALLOCS; i++) {
		if (ptrs[i] == dptr && dptr) {
			used_bytes -= sizes[i];
			ptrs[i] = 0;
			pthread_mutex_unlock(&mu);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
	switch (r) {
	case SUCCESS: *s = "CUDA_SUCCESS"; return SUCCESS;
	case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return SUCCESS;
	case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return SUCCESS;
	case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return SUCCESS;
	case NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return SUCCESS;
	case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return SUCCESS;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return SUCCESS;
	}
	*s = 0;
	return INVALID_VALUE;
}

/* fakecuda_used reports the booked bytes, for tests that look from outside. */
unsigned long long fakecuda_used(void) { return used_bytes; }
