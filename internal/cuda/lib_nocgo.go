// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !cgo

package cuda

import (
	"fmt"
	"unsafe"
)

// Without cgo there is no way to call into libcuda; loadLib says so and
// every other entry point is unreachable, since no Driver can be made.

const maxArgs = 32

type lib struct{}

func loadLib() (*lib, error) {
	return nil, fmt.Errorf("%w: internal/cuda was built without cgo", errNoDriver)
}

const errNoCgo result = 3 // CUDA_ERROR_NOT_INITIALIZED

func (*lib) init(uint32) result                                  { return errNoCgo }
func (*lib) driverVersion() (int, result)                        { return 0, errNoCgo }
func (*lib) deviceCount() (int, result)                          { return 0, errNoCgo }
func (*lib) deviceGet(int) (int32, result)                       { return 0, errNoCgo }
func (*lib) deviceAttr(int, int32) (int, result)                 { return 0, errNoCgo }
func (*lib) deviceName(int32) (string, result)                   { return "", errNoCgo }
func (*lib) deviceUUID(int32) ([16]byte, result)                 { return [16]byte{}, errNoCgo }
func (*lib) deviceTotalMem(int32) (uint64, result)               { return 0, errNoCgo }
func (*lib) primaryCtxRetain(int32) (uintptr, result)            { return 0, errNoCgo }
func (*lib) primaryCtxRelease(int32) result                      { return errNoCgo }
func (*lib) ctxSetCurrent(uintptr) result                        { return errNoCgo }
func (*lib) ctxSynchronize() result                              { return errNoCgo }
func (*lib) streamCreate(uint32) (uintptr, result)               { return 0, errNoCgo }
func (*lib) streamSynchronize(uintptr) result                    { return errNoCgo }
func (*lib) streamDestroy(uintptr) result                        { return errNoCgo }
func (*lib) eventCreate(uint32) (uintptr, result)                { return 0, errNoCgo }
func (*lib) eventRecord(uintptr, uintptr) result                 { return errNoCgo }
func (*lib) eventSynchronize(uintptr) result                     { return errNoCgo }
func (*lib) eventElapsed(uintptr, uintptr) (float32, result)     { return 0, errNoCgo }
func (*lib) eventDestroy(uintptr) result                         { return errNoCgo }
func (*lib) memAlloc(int) (uint64, result)                       { return 0, errNoCgo }
func (*lib) memFree(uint64) result                               { return errNoCgo }
func (*lib) memcpyHtoD(uint64, unsafe.Pointer, int) result       { return errNoCgo }
func (*lib) memcpyDtoH(unsafe.Pointer, uint64, int) result       { return errNoCgo }
func (*lib) memcpyDtoDAsync(uint64, uint64, int, uintptr) result { return errNoCgo }
func (*lib) memsetD8(uint64, byte, int) result                   { return errNoCgo }
func (*lib) memsetD8Async(uint64, byte, int, uintptr) result     { return errNoCgo }
func (*lib) moduleLoad([]byte) (uintptr, string, result)         { return 0, "", errNoCgo }
func (*lib) moduleGetFunction(uintptr, string) (uintptr, result) { return 0, errNoCgo }
func (*lib) moduleUnload(uintptr) result                         { return errNoCgo }
func (*lib) maxActiveBlocks(uintptr, int, int) (int, result)     { return 0, errNoCgo }
func (*lib) beginCapture(uintptr, int) result                    { return errNoCgo }
func (*lib) endCapture(uintptr) (uintptr, result)                { return 0, errNoCgo }
func (*lib) graphInstantiate(uintptr, uint64) (uintptr, result)  { return 0, errNoCgo }
func (*lib) graphLaunch(uintptr, uintptr) result                 { return errNoCgo }
func (*lib) graphExecDestroy(uintptr) result                     { return errNoCgo }
func (*lib) graphDestroy(uintptr) result                         { return errNoCgo }
func (*lib) errorName(result) string                             { return "CUDA_ERROR_NOT_INITIALIZED" }
func (*lib) errorString(result) string                           { return "built without cgo" }
func (*lib) launchPacked(uintptr, Dim3, Dim3, uint32, uintptr, []byte) result {
	return errNoCgo
}

func (*lib) nop() {}

func (*lib) launch(uintptr, Dim3, Dim3, uint32, uintptr, []uint64, []uint64, int) result {
	return errNoCgo
}
