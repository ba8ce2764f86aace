// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Our own minimal declarations of the driver API types: no cuda.h needed.
// Handles are opaque pointers, CUdevice is an int, CUdeviceptr is an
// unsigned 64-bit integer on every 64-bit platform, enums are ints.
typedef int kq_res;
typedef unsigned long long kq_dptr;
// kq_h carries a driver handle through Go as an integer.
typedef uintptr_t kq_h;

#define KQ_MAX_ARGS 32

// KQ_SYMBOLS lists every driver function kquant calls, once: its field in
// kq_lib, its parameters, the symbol to resolve and an older name to fall
// back to (or NULL). The struct and kq_open both expand it, so that a field
// cannot lack its symbol. cuEventElapsedTime_v2 appeared in CUDA 12.8 and is
// what cuda.h maps the plain name to since 13.0; older drivers only export
// the plain one, with the same signature.
#define KQ_SYMBOLS(X) \
	X(cuInit, (unsigned int), "cuInit", NULL) \
	X(cuDriverGetVersion, (int *), "cuDriverGetVersion", NULL) \
	X(cuDeviceGetCount, (int *), "cuDeviceGetCount", NULL) \
	X(cuDeviceGet, (int *, int), "cuDeviceGet", NULL) \
	X(cuDeviceGetAttribute, (int *, int, int), "cuDeviceGetAttribute", NULL) \
	X(cuDeviceGetName, (char *, int, int), "cuDeviceGetName", NULL) \
	X(cuDeviceGetUuid, (unsigned char *, int), "cuDeviceGetUuid_v2", "cuDeviceGetUuid") \
	X(cuDeviceTotalMem, (size_t *, int), "cuDeviceTotalMem_v2", NULL) \
	X(cuDevicePrimaryCtxRetain, (void **, int), "cuDevicePrimaryCtxRetain", NULL) \
	X(cuDevicePrimaryCtxRelease, (int), "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease") \
	X(cuCtxSetCurrent, (void *), "cuCtxSetCurrent", NULL) \
	X(cuCtxSynchronize, (void), "cuCtxSynchronize", NULL) \
	X(cuStreamCreate, (void **, unsigned int), "cuStreamCreate", NULL) \
	X(cuStreamSynchronize, (void *), "cuStreamSynchronize", NULL) \
	X(cuStreamDestroy, (void *), "cuStreamDestroy_v2", NULL) \
	X(cuEventCreate, (void **, unsigned int), "cuEventCreate", NULL) \
	X(cuEventRecord, (void *, void *), "cuEventRecord", NULL) \
	X(cuEventSynchronize, (void *), "cuEventSynchronize", NULL) \
	X(cuEventElapsedTime, (float *, void *, void *), "cuEventElapsedTime_v2", "cuEventElapsedTime") \
	X(cuEventDestroy, (void *), "cuEventDestroy_v2", NULL) \
	X(cuMemAlloc, (kq_dptr *, size_t), "cuMemAlloc_v2", NULL) \
	X(cuMemFree, (kq_dptr), "cuMemFree_v2", NULL) \
	X(cuMemcpyHtoD, (kq_dptr, const void *, size_t), "cuMemcpyHtoD_v2", NULL) \
	X(cuMemcpyDtoH, (void *, kq_dptr, size_t), "cuMemcpyDtoH_v2", NULL) \
	X(cuMemcpyDtoDAsync, (kq_dptr, kq_dptr, size_t, void *), "cuMemcpyDtoDAsync_v2", NULL) \
	X(cuMemsetD8, (kq_dptr, unsigned char, size_t), "cuMemsetD8_v2", NULL) \
	X(cuMemsetD8Async, (kq_dptr, unsigned char, size_t, void *), "cuMemsetD8Async", NULL) \
	X(cuModuleLoadDataEx, (void **, const void *, unsigned int, int *, void **), "cuModuleLoadDataEx", NULL) \
	X(cuModuleGetFunction, (void **, void *, const char *), "cuModuleGetFunction", NULL) \
	X(cuModuleUnload, (void *), "cuModuleUnload", NULL) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int *, void *, int, size_t), \
		"cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL) \
	X(cuLaunchKernel, (void *, unsigned int, unsigned int, unsigned int, \
		unsigned int, unsigned int, unsigned int, unsigned int, void *, void **, void **), "cuLaunchKernel", NULL) \
	X(cuStreamBeginCapture, (void *, int), "cuStreamBeginCapture_v2", NULL) \
	X(cuStreamEndCapture, (void *, void **), "cuStreamEndCapture", NULL) \
	X(cuGraphInstantiateWithFlags, (void **, void *, unsigned long long), "cuGraphInstantiateWithFlags", NULL) \
	X(cuGraphLaunch, (void *, void *), "cuGraphLaunch", NULL) \
	X(cuGraphExecDestroy, (void *), "cuGraphExecDestroy", NULL) \
	X(cuGraphDestroy, (void *), "cuGraphDestroy", NULL) \
	X(cuGetErrorName, (kq_res, const char **), "cuGetErrorName", NULL) \
	X(cuGetErrorString, (kq_res, const char **), "cuGetErrorString", NULL)

typedef struct {
	void *handle;
#define KQ_FIELD(field, params, sym, fallback) kq_res (*field) params;
	KQ_SYMBOLS(KQ_FIELD)
#undef KQ_FIELD
} kq_lib;

// kq_sym resolves the first of up to two names; versioned names come first so
// that the ABI we declare above is the one we get (the unversioned symbols
// keep their pre-_v2 signatures for old binaries).
static void *kq_sym(void *h, const char *a, const char *b) {
	void *p = dlsym(h, a);
	if (p == NULL && b != NULL) p = dlsym(h, b);
	return p;
}

// kq_open fills l. It returns 0 on success, 1 when libcuda cannot be opened
// and 2 when a symbol is missing; err receives dlerror() or the symbol name.
static int kq_open(kq_lib *l, char *err, size_t errlen) {
	memset(l, 0, sizeof(*l));
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return 1;
	}
	l->handle = h;
#define KQ_LOAD(field, params, sym, fallback) do { \
		*(void **)(&l->field) = kq_sym(h, sym, fallback); \
		if (l->field == NULL) { snprintf(err, errlen, "symbol %s not found", sym); return 2; } \
	} while (0);
	KQ_SYMBOLS(KQ_LOAD)
#undef KQ_LOAD
	return 0;
}

// cgo cannot call C function pointers directly, hence one trampoline each.
static kq_res kq_init(kq_lib *l, unsigned int f) { return l->cuInit(f); }
static kq_res kq_driver_version(kq_lib *l, int *v) { return l->cuDriverGetVersion(v); }
static kq_res kq_device_count(kq_lib *l, int *n) { return l->cuDeviceGetCount(n); }
static kq_res kq_device_get(kq_lib *l, int *d, int ord) { return l->cuDeviceGet(d, ord); }
static kq_res kq_device_attr(kq_lib *l, int *v, int attr, int d) { return l->cuDeviceGetAttribute(v, attr, d); }
static kq_res kq_device_name(kq_lib *l, char *name, int len, int d) { return l->cuDeviceGetName(name, len, d); }
static kq_res kq_device_uuid(kq_lib *l, unsigned char *u, int d) { return l->cuDeviceGetUuid(u, d); }
static kq_res kq_device_mem(kq_lib *l, size_t *b, int d) { return l->cuDeviceTotalMem(b, d); }
static kq_res kq_ctx_retain(kq_lib *l, void **c, int d) { return l->cuDevicePrimaryCtxRetain(c, d); }
static kq_res kq_ctx_release(kq_lib *l, int d) { return l->cuDevicePrimaryCtxRelease(d); }
static kq_res kq_ctx_set(kq_lib *l, kq_h c) { return l->cuCtxSetCurrent((void *)c); }
static kq_res kq_ctx_sync(kq_lib *l) { return l->cuCtxSynchronize(); }
static kq_res kq_stream_create(kq_lib *l, void **s, unsigned int f) { return l->cuStreamCreate(s, f); }
static kq_res kq_stream_sync(kq_lib *l, kq_h s) { return l->cuStreamSynchronize((void *)s); }
static kq_res kq_stream_destroy(kq_lib *l, kq_h s) { return l->cuStreamDestroy((void *)s); }
static kq_res kq_event_create(kq_lib *l, void **e, unsigned int f) { return l->cuEventCreate(e, f); }
static kq_res kq_event_record(kq_lib *l, kq_h e, kq_h s) { return l->cuEventRecord((void *)e, (void *)s); }
static kq_res kq_event_sync(kq_lib *l, kq_h e) { return l->cuEventSynchronize((void *)e); }
static kq_res kq_event_elapsed(kq_lib *l, float *ms, kq_h a, kq_h b) { return l->cuEventElapsedTime(ms, (void *)a, (void *)b); }
static kq_res kq_event_destroy(kq_lib *l, kq_h e) { return l->cuEventDestroy((void *)e); }
static kq_res kq_mem_alloc(kq_lib *l, kq_dptr *p, size_t n) { return l->cuMemAlloc(p, n); }
static kq_res kq_mem_free(kq_lib *l, kq_dptr p) { return l->cuMemFree(p); }
static kq_res kq_htod(kq_lib *l, kq_dptr d, const void *s, size_t n) { return l->cuMemcpyHtoD(d, s, n); }
static kq_res kq_dtoh(kq_lib *l, void *d, kq_dptr s, size_t n) { return l->cuMemcpyDtoH(d, s, n); }
static kq_res kq_dtod_async(kq_lib *l, kq_dptr d, kq_dptr s, size_t n, kq_h st) { return l->cuMemcpyDtoDAsync(d, s, n, (void *)st); }
static kq_res kq_memset8(kq_lib *l, kq_dptr d, unsigned char v, size_t n) { return l->cuMemsetD8(d, v, n); }
static kq_res kq_memset8_async(kq_lib *l, kq_dptr d, unsigned char v, size_t n, kq_h st) { return l->cuMemsetD8Async(d, v, n, (void *)st); }
static kq_res kq_module_get_function(kq_lib *l, void **f, kq_h m, const char *name) { return l->cuModuleGetFunction(f, (void *)m, name); }
static kq_res kq_module_unload(kq_lib *l, kq_h m) { return l->cuModuleUnload((void *)m); }
static kq_res kq_occupancy(kq_lib *l, int *n, kq_h f, int block, size_t smem) {
	return l->cuOccupancyMaxActiveBlocksPerMultiprocessor(n, (void *)f, block, smem);
}
static kq_res kq_begin_capture(kq_lib *l, kq_h s, int mode) { return l->cuStreamBeginCapture((void *)s, mode); }
static kq_res kq_end_capture(kq_lib *l, kq_h s, void **g) { return l->cuStreamEndCapture((void *)s, g); }
static kq_res kq_graph_instantiate(kq_lib *l, void **ge, kq_h g, unsigned long long f) { return l->cuGraphInstantiateWithFlags(ge, (void *)g, f); }
static kq_res kq_graph_launch(kq_lib *l, kq_h ge, kq_h s) { return l->cuGraphLaunch((void *)ge, (void *)s); }
static kq_res kq_graph_exec_destroy(kq_lib *l, kq_h ge) { return l->cuGraphExecDestroy((void *)ge); }
static kq_res kq_graph_destroy(kq_lib *l, kq_h g) { return l->cuGraphDestroy((void *)g); }
static kq_res kq_error_name(kq_lib *l, kq_res r, const char **s) { return l->cuGetErrorName(r, s); }
static kq_res kq_error_string(kq_lib *l, kq_res r, const char **s) { return l->cuGetErrorString(r, s); }

// kq_module_load JIT-compiles a NUL-terminated PTX image, asking the driver
// for its error and info logs so that a failure says what line broke.
// CUjit_option values: INFO_LOG_BUFFER 3, INFO_LOG_BUFFER_SIZE_BYTES 4,
// ERROR_LOG_BUFFER 5, ERROR_LOG_BUFFER_SIZE_BYTES 6.
static kq_res kq_module_load(kq_lib *l, void **m, const void *image,
		char *errlog, unsigned int errlen, char *infolog, unsigned int infolen) {
	int opts[4] = {5, 6, 3, 4};
	void *vals[4] = {errlog, (void *)(uintptr_t)errlen, infolog, (void *)(uintptr_t)infolen};
	return l->cuModuleLoadDataEx(m, image, 4, opts, vals);
}

// kq_launch passes each kernel parameter from its own 8-byte slot of args;
// the driver reads as many bytes of a slot as the parameter is wide, which on
// little-endian hosts are the low bytes where Args stores narrower values.
//
// A by-value struct parameter (blobIdx >= 0) is passed as a pointer to its
// bytes instead of a slot: the driver copies sizeof(struct) bytes from it
// into the launch's parameter buffer before cuLaunchKernel returns (and a
// stream capture stores them in the graph node), so the memory is free for
// reuse as soon as this call returns.
static kq_res kq_launch(kq_lib *l, kq_h f, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, kq_h s,
		uint64_t *args, int nargs, uint64_t *blob, int blobIdx) {
	void *params[KQ_MAX_ARGS];
	if (nargs > KQ_MAX_ARGS) return 1; // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < nargs; i++) params[i] = &args[i];
	if (blobIdx >= 0 && blobIdx < nargs) params[blobIdx] = blob;
	return l->cuLaunchKernel((void *)f, gx, gy, gz, bx, by, bz, shmem, (void *)s, params, NULL);
}

// kq_launch_packed passes the kernel's whole parameter block as one buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER = 1, CU_LAUNCH_PARAM_BUFFER_SIZE = 2,
// CU_LAUNCH_PARAM_END = 0): the driver copies size bytes from buf once,
// instead of one copy per parameter from an array of pointers. buf must
// hold the parameters at their ABI offsets. Like kq_launch, buf is free
// for reuse once this returns.
static kq_res kq_launch_packed(kq_lib *l, kq_h f, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, kq_h s,
		unsigned char *buf, size_t size) {
	void *extra[5] = {(void *)(uintptr_t)1, (void *)buf, (void *)(uintptr_t)2, &size, (void *)(uintptr_t)0};
	return l->cuLaunchKernel((void *)f, gx, gy, gz, bx, by, bz, shmem, (void *)s, NULL, extra);
}

// kq_nop is an empty call: it measures what a cgo call costs by itself.
static int kq_nop(kq_lib *l) { return l != NULL; }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// maxArgs mirrors KQ_MAX_ARGS.
const maxArgs = C.KQ_MAX_ARGS

// lib is the table of resolved driver entry points. It lives in C memory
// because the trampolines take its address; it is created by loadLib and
// never freed, since unloading libcuda under live contexts is unsafe.
type lib struct {
	t *C.kq_lib
}

func loadLib() (*lib, error) {
	t := (*C.kq_lib)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kq_lib{}))))
	var msg [512]C.char
	switch C.kq_open(t, &msg[0], C.size_t(len(msg))) {
	case 0:
		return &lib{t: t}, nil
	case 1:
		C.free(unsafe.Pointer(t))
		return nil, fmt.Errorf("%w: %s", errNoDriver, C.GoString(&msg[0]))
	default:
		C.free(unsafe.Pointer(t))
		return nil, fmt.Errorf("%w: libcuda.so.1 too old: %s", errNoDriver, C.GoString(&msg[0]))
	}
}

func (l *lib) init(flags uint32) result { return result(C.kq_init(l.t, C.uint(flags))) }

func (l *lib) driverVersion() (int, result) {
	var v C.int
	r := C.kq_driver_version(l.t, &v)
	return int(v), result(r)
}

func (l *lib) deviceCount() (int, result) {
	var n C.int
	r := C.kq_device_count(l.t, &n)
	return int(n), result(r)
}

func (l *lib) deviceGet(ordinal int) (int32, result) {
	var d C.int
	r := C.kq_device_get(l.t, &d, C.int(ordinal))
	return int32(d), result(r)
}

func (l *lib) deviceAttr(attr int, dev int32) (int, result) {
	var v C.int
	r := C.kq_device_attr(l.t, &v, C.int(attr), C.int(dev))
	return int(v), result(r)
}

func (l *lib) deviceName(dev int32) (string, result) {
	var name [256]C.char
	r := C.kq_device_name(l.t, &name[0], C.int(len(name)), C.int(dev))
	return C.GoString(&name[0]), result(r)
}

func (l *lib) deviceUUID(dev int32) ([16]byte, result) {
	var u [16]C.uchar
	r := C.kq_device_uuid(l.t, &u[0], C.int(dev))
	var out [16]byte
	for i := range u {
		out[i] = byte(u[i])
	}
	return out, result(r)
}

func (l *lib) deviceTotalMem(dev int32) (uint64, result) {
	var b C.size_t
	r := C.kq_device_mem(l.t, &b, C.int(dev))
	return uint64(b), result(r)
}

func (l *lib) primaryCtxRetain(dev int32) (uintptr, result) {
	var c unsafe.Pointer
	r := C.kq_ctx_retain(l.t, &c, C.int(dev))
	return uintptr(c), result(r)
}

func (l *lib) primaryCtxRelease(dev int32) result {
	return result(C.kq_ctx_release(l.t, C.int(dev)))
}

func (l *lib) ctxSetCurrent(c uintptr) result { return result(C.kq_ctx_set(l.t, C.kq_h(c))) }

func (l *lib) ctxSynchronize() result { return result(C.kq_ctx_sync(l.t)) }

func (l *lib) streamCreate(flags uint32) (uintptr, result) {
	var s unsafe.Pointer
	r := C.kq_stream_create(l.t, &s, C.uint(flags))
	return uintptr(s), result(r)
}

func (l *lib) streamSynchronize(s uintptr) result { return result(C.kq_stream_sync(l.t, C.kq_h(s))) }

func (l *lib) streamDestroy(s uintptr) result { return result(C.kq_stream_destroy(l.t, C.kq_h(s))) }

func (l *lib) eventCreate(flags uint32) (uintptr, result) {
	var e unsafe.Pointer
	r := C.kq_event_create(l.t, &e, C.uint(flags))
	return uintptr(e), result(r)
}

func (l *lib) eventRecord(e, s uintptr) result {
	return result(C.kq_event_record(l.t, C.kq_h(e), C.kq_h(s)))
}

func (l *lib) eventSynchronize(e uintptr) result { return result(C.kq_event_sync(l.t, C.kq_h(e))) }

func (l *lib) eventElapsed(start, end uintptr) (float32, result) {
	var ms C.float
	r := C.kq_event_elapsed(l.t, &ms, C.kq_h(start), C.kq_h(end))
	return float32(ms), result(r)
}

func (l *lib) eventDestroy(e uintptr) result { return result(C.kq_event_destroy(l.t, C.kq_h(e))) }

func (l *lib) memAlloc(n int) (uint64, result) {
	var p C.kq_dptr
	r := C.kq_mem_alloc(l.t, &p, C.size_t(n))
	return uint64(p), result(r)
}

func (l *lib) memFree(p uint64) result { return result(C.kq_mem_free(l.t, C.kq_dptr(p))) }

func (l *lib) memcpyHtoD(dst uint64, src unsafe.Pointer, n int) result {
	return result(C.kq_htod(l.t, C.kq_dptr(dst), src, C.size_t(n)))
}

func (l *lib) memcpyDtoH(dst unsafe.Pointer, src uint64, n int) result {
	return result(C.kq_dtoh(l.t, dst, C.kq_dptr(src), C.size_t(n)))
}

func (l *lib) memcpyDtoDAsync(dst, src uint64, n int, s uintptr) result {
	return result(C.kq_dtod_async(l.t, C.kq_dptr(dst), C.kq_dptr(src), C.size_t(n), C.kq_h(s)))
}

func (l *lib) memsetD8(dst uint64, v byte, n int) result {
	return result(C.kq_memset8(l.t, C.kq_dptr(dst), C.uchar(v), C.size_t(n)))
}

func (l *lib) memsetD8Async(dst uint64, v byte, n int, s uintptr) result {
	return result(C.kq_memset8_async(l.t, C.kq_dptr(dst), C.uchar(v), C.size_t(n), C.kq_h(s)))
}

// jitLogBytes bounds each JIT log; PTX errors are a few lines.
const jitLogBytes = 16 << 10

func (l *lib) moduleLoad(image []byte) (uintptr, string, result) {
	// The PTX must be NUL-terminated and must not move during the call, so
	// it is copied to C memory.
	img := C.malloc(C.size_t(len(image) + 1))
	defer C.free(img)
	buf := unsafe.Slice((*byte)(img), len(image)+1)
	copy(buf, image)
	buf[len(image)] = 0
	errlog := (*C.char)(C.calloc(jitLogBytes, 1))
	defer C.free(unsafe.Pointer(errlog))
	infolog := (*C.char)(C.calloc(jitLogBytes, 1))
	defer C.free(unsafe.Pointer(infolog))
	var m unsafe.Pointer
	r := C.kq_module_load(l.t, &m, img, errlog, jitLogBytes, infolog, jitLogBytes)
	log := C.GoString(errlog)
	if log == "" {
		log = C.GoString(infolog)
	}
	return uintptr(m), log, result(r)
}

func (l *lib) moduleGetFunction(m uintptr, name string) (uintptr, result) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f unsafe.Pointer
	r := C.kq_module_get_function(l.t, &f, C.kq_h(m), cname)
	return uintptr(f), result(r)
}

func (l *lib) moduleUnload(m uintptr) result { return result(C.kq_module_unload(l.t, C.kq_h(m))) }

func (l *lib) maxActiveBlocks(f uintptr, blockThreads, dynamicSharedBytes int) (int, result) {
	var n C.int
	r := C.kq_occupancy(l.t, &n, C.kq_h(f), C.int(blockThreads), C.size_t(dynamicSharedBytes))
	return int(n), result(r)
}

// launch passes args (and, when blobIdx >= 0, blob as parameter blobIdx).
// Both are Go memory holding no Go pointers, read by the driver only during
// the call, which cgo's pointer rules allow.
func (l *lib) launch(f uintptr, grid, block Dim3, shmem uint32, s uintptr, args []uint64, blob []uint64, blobIdx int) result {
	var p *C.uint64_t
	if len(args) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&args[0]))
	}
	// A typed pointer, not unsafe.Pointer: cgo's pointer check then looks
	// at the uint64 words alone rather than the whole object holding them
	// (an Args inside a larger struct with Go pointers).
	var bp *C.uint64_t
	if blobIdx >= 0 && len(blob) > 0 {
		bp = (*C.uint64_t)(unsafe.Pointer(&blob[0]))
	} else {
		blobIdx = -1
	}
	return result(C.kq_launch(l.t, C.kq_h(f),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z),
		C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(shmem), C.kq_h(s), p, C.int(len(args)), bp, C.int(blobIdx)))
}

// launchPacked passes buf as the kernel's whole parameter block. buf is Go
// memory holding no Go pointers, read by the driver only during the call;
// it is passed as a typed pointer so that cgo's check looks at the bytes
// alone, not at a larger object holding them (a kernels.Set).
func (l *lib) launchPacked(f uintptr, grid, block Dim3, shmem uint32, s uintptr, buf []byte) result {
	return result(C.kq_launch_packed(l.t, C.kq_h(f),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z),
		C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(shmem), C.kq_h(s), (*C.uchar)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))))
}

func (l *lib) nop() { C.kq_nop(l.t) }

func (l *lib) beginCapture(s uintptr, mode int) result {
	return result(C.kq_begin_capture(l.t, C.kq_h(s), C.int(mode)))
}

func (l *lib) endCapture(s uintptr) (uintptr, result) {
	var g unsafe.Pointer
	r := C.kq_end_capture(l.t, C.kq_h(s), &g)
	return uintptr(g), result(r)
}

func (l *lib) graphInstantiate(g uintptr, flags uint64) (uintptr, result) {
	var ge unsafe.Pointer
	r := C.kq_graph_instantiate(l.t, &ge, C.kq_h(g), C.ulonglong(flags))
	return uintptr(ge), result(r)
}

func (l *lib) graphLaunch(ge, s uintptr) result {
	return result(C.kq_graph_launch(l.t, C.kq_h(ge), C.kq_h(s)))
}

func (l *lib) graphExecDestroy(ge uintptr) result {
	return result(C.kq_graph_exec_destroy(l.t, C.kq_h(ge)))
}

func (l *lib) graphDestroy(g uintptr) result { return result(C.kq_graph_destroy(l.t, C.kq_h(g))) }

func (l *lib) errorName(r result) string {
	var s *C.char
	if C.kq_error_name(l.t, C.kq_res(r), &s) != 0 || s == nil {
		return ""
	}
	return C.GoString(s)
}

func (l *lib) errorString(r result) string {
	var s *C.char
	if C.kq_error_string(l.t, C.kq_res(r), &s) != 0 || s == nil {
		return ""
	}
	return C.GoString(s)
}
