// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"errors"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// Name is the backend's name, as results and profiles spell it.
const Name = "cuda"

// maxCachedSteps bounds how many shapes' buffers Quantize keeps for reuse;
// together with a quarter of the device memory it keeps the cache from
// crowding out the next, larger shape.
const maxCachedSteps = 8

// Backend is the CUDA quant.Backend of one device. Its methods are safe for
// concurrent use: every device operation runs on the device's owner thread,
// one at a time.
type Backend struct {
	dev      *cuda.Device
	closeDev bool
	// set, stream and cache are used on the device thread only.
	set    *kernels.Set
	stream cuda.Stream
	cache  stepCache
}

var _ quant.Backend = (*Backend)(nil)

// New opens device 0 and loads the kernels on it. Without a CUDA driver the
// error says "no CUDA driver" (cuda.IsNoDriver reports true).
func New(ctx context.Context) (*Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	drv, err := cuda.Open()
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	return openOwned(drv, 0, "cuda backend")
}

// openOwned opens device ordinal of drv and loads the kernels on it; the
// backend owns the device (Close closes it). An error opening the device
// is wrapped with what.
func openOwned(drv *cuda.Driver, ordinal int, what string) (*Backend, error) {
	dev, err := drv.OpenDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	b, err := open(dev, true)
	if err != nil {
		_ = dev.Close()
		return nil, err
	}
	return b, nil
}

// NewOnDevice loads the kernels on an opened device; the device stays the
// caller's (Close leaves it open).
func NewOnDevice(dev *cuda.Device) (*Backend, error) { return open(dev, false) }

func open(dev *cuda.Device, closeDev bool) (*Backend, error) {
	b := &Backend{dev: dev, closeDev: closeDev}
	b.cache.budget = int64(dev.Info().TotalMemBytes / 4)
	err := dev.Do(func(c *cuda.Ctx) error {
		var err error
		if b.set, err = kernels.Load(c); err != nil {
			return err
		}
		if b.stream, err = c.NewStream(); err != nil {
			_ = b.set.Close(c)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda backend on %s: %w", dev.Info().Name, err)
	}
	return b, nil
}

// KernelModules lists the kernel modules loaded so far (each loads on its
// first use) and what each was loaded from (kernels.Set.Loaded).
func (b *Backend) KernelModules() ([]kernels.LoadedModule, error) {
	var mods []kernels.LoadedModule
	err := b.dev.Do(func(*cuda.Ctx) error {
		mods = b.set.Loaded()
		return nil
	})
	return mods, err
}

// Name returns "cuda".
func (*Backend) Name() string { return Name }

// Device is the device the backend runs on.
func (b *Backend) Device() *cuda.Device { return b.dev }

// Close frees the cached steps, the stream and the kernels, and closes the
// device if New opened it.
func (b *Backend) Close() error {
	err := b.dev.Do(func(c *cuda.Ctx) error {
		errs := []error{b.cache.clear(c)}
		errs = append(errs, c.DestroyStream(b.stream), b.set.Close(c))
		return errors.Join(errs...)
	})
	if b.closeDev {
		err = errors.Join(err, b.dev.Close())
	}
	return err
}

// stepCache keeps the steps of recent shapes, least recently used first,
// so that repeated quantizes of a shape allocate nothing.
type stepCache struct {
	budget int64
	steps  []cachedStep
}

type cachedStep struct {
	key  string
	step *Step
}

// get returns the step for cfg, making it (and evicting old ones) if need be.
func (sc *stepCache) get(c *cuda.Ctx, b *Backend, cfg Config) (*Step, error) {
	k := cfg.key()
	for i, e := range sc.steps {
		if e.key == k {
			sc.steps = append(append(sc.steps[:i:i], sc.steps[i+1:]...), e)
			return e.step, nil
		}
	}
	// Evict before allocating: the new step may need the memory.
	for len(sc.steps) >= maxCachedSteps || (len(sc.steps) > 0 && sc.size() > sc.budget) {
		if err := sc.steps[0].step.free(c); err != nil {
			return nil, err
		}
		sc.steps = sc.steps[1:]
	}
	s, err := b.newStep(c, []Config{cfg})
	if err != nil {
		return nil, err
	}
	sc.steps = append(sc.steps, cachedStep{key: k, step: s})
	return s, nil
}

func (sc *stepCache) size() int64 {
	var n int64
	for _, e := range sc.steps {
		n += e.step.size
	}
	return n
}

func (sc *stepCache) clear(c *cuda.Ctx) error {
	var errs []error
	for _, e := range sc.steps {
		errs = append(errs, e.step.free(c))
	}
	sc.steps = nil
	return errors.Join(errs...)
}

// Quantize implements quant.Backend: one eager step on a cached step of
// x's shape. For DelayedScaling it records the amax in
// req.State.AmaxHistory[0] (the caller ends the step with State.Update).
// The no-op flag is the host's here (req.NoOp points at host memory), so
// it is read before anything is launched: a skipped step returns
// req.Output untouched, as the reference does; a Step takes the flag on
// the device (Config, Step.SetNoOp).
func (b *Backend) Quantize(ctx context.Context, req quant.Request, x quant.Tensor) (*quant.Result, error) {
	plan, err := quant.CheckRequest(req, x)
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if err := checkPlan(plan); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if quant.Skipped(req.NoOp) {
		if req.Output == nil {
			return nil, fmt.Errorf("quantize: %w", quant.ErrNoOutputToKeep)
		}
		return req.Output, nil
	}
	out := req.Output
	req.NoOp, req.Output = nil, nil
	res, err := b.quantize(ctx, plan, req, x)
	if err != nil || out == nil {
		return res, err
	}
	*out = *res
	return out, nil
}

// quantize is Quantize of a request that runs, without a no-op flag.
func (b *Backend) quantize(ctx context.Context, plan quant.Plan, req quant.Request, x quant.Tensor) (*quant.Result, error) {
	delayed := plan.Scheme == quant.DelayedScaling
	if x.Rows == 0 || x.Cols == 0 {
		// Nothing to launch: an empty tensor's result (amax 0, no codes)
		// is the reference's.
		return reference.New().Quantize(ctx, req, x)
	}
	cfg := Config{Request: req, Rows: x.Rows, Cols: x.Cols, Input: InputType(x.Data)}
	// Encoding is host work: do it before taking the device thread.
	raw := make([]byte, x.Rows*x.Cols*cfg.Input.Size())
	encodeInput(raw, x.Data, cfg.Input)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var res *quant.Result
	err := b.dev.Do(func(c *cuda.Ctx) error {
		s, err := b.cache.get(c, b, cfg)
		if err != nil {
			return err
		}
		p := s.parts[0]
		if err := c.CopyToDevice(p.x, raw); err != nil {
			return fmt.Errorf("copying the input: %w", err)
		}
		if delayed {
			if err := p.setState(c, req.State); err != nil {
				return err
			}
		}
		// The seed is a launch parameter: an eager step takes this
		// request's.
		p.seed = req.Seed
		if err := s.enqueue(c); err != nil {
			return err
		}
		if err := c.StreamSynchronize(b.stream); err != nil {
			return err
		}
		if res, err = p.result(c, b.set, b.stream); err != nil {
			return err
		}
		if delayed {
			// The cast raised history entry 0 to this tensor's amax.
			h0 := make([]float32, 1)
			if err := cuda.Download(c, h0, p.hist); err != nil {
				return fmt.Errorf("reading the amax history: %w", err)
			}
			req.State.AmaxHistory[0] = h0[0]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quantize %s [%d, %d] on %s: %w", plan.Scheme, x.Rows, x.Cols, Name, err)
	}
	return res, nil
}

// Dequantize implements quant.Backend with the dequantize kernels.
func (b *Backend) Dequantize(ctx context.Context, r *quant.Result, u quant.Usage) (quant.Tensor, error) {
	o := r.Operand(u)
	if o == nil {
		return quant.Tensor{}, fmt.Errorf("dequantize: result has no operand for usage %d", u)
	}
	if err := checkPlan(r.Plan); err != nil {
		return quant.Tensor{}, fmt.Errorf("dequantize: %w", err)
	}
	out := quant.NewTensor(o.Rows, o.Cols)
	if o.Rows*o.Cols == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return quant.Tensor{}, err
	}
	err := b.dev.Do(func(c *cuda.Ctx) error {
		dst, err := c.Alloc(4 * o.Rows * o.Cols)
		if err != nil {
			return err
		}
		defer c.Free(dst)
		if err := b.dequantizeTo(c, r, u, dst); err != nil {
			return err
		}
		if err := c.StreamSynchronize(b.stream); err != nil {
			return err
		}
		return cuda.Download(c, out.Data, dst)
	})
	if err != nil {
		return quant.Tensor{}, fmt.Errorf("dequantize on %s: %w", Name, err)
	}
	return out, nil
}

// dequantizeTo decodes operand u of r to float32 into the device buffer dst
// ([o.Rows, o.Cols], its stored orientation) on the backend's stream. The
// codes and scales are copied to temporary device buffers, freed before it
// returns (after the stream has finished with them).
func (b *Backend) dequantizeTo(c *cuda.Ctx, r *quant.Result, u quant.Usage, dst cuda.Buffer) error {
	o := r.Operand(u)
	n := o.Rows * o.Cols
	if len(o.Data) != o.Rows*o.RowStride() {
		return fmt.Errorf("operand [%d, %d] has %d bytes of codes, want %d", o.Rows, o.Cols, len(o.Data), o.Rows*o.RowStride())
	}
	var bufs []cuda.Buffer
	defer func() {
		// The kernel may still read these: wait before freeing.
		_ = c.StreamSynchronize(b.stream)
		for _, x := range bufs {
			_ = c.Free(x)
		}
	}()
	upload := func(raw []byte) (cuda.Buffer, error) {
		x, err := c.Alloc(max(len(raw), 1))
		if err != nil {
			return x, err
		}
		bufs = append(bufs, x)
		return x, c.CopyToDevice(x, raw)
	}
	q, err := upload(o.Data)
	if err != nil {
		return err
	}
	switch {
	case o.Scales == quant.ScaleFloat32 && r.Plan.PerTensor():
		if len(o.ScaleInv) != 1 {
			return fmt.Errorf("per-tensor operand with %d scales", len(o.ScaleInv))
		}
		f, err := format(o.Element)
		if err != nil {
			return err
		}
		sinv, err := upload(cuda.Bytes(o.ScaleInv))
		if err != nil {
			return err
		}
		return b.set.Dequantize(c, b.stream, q, n, sinv, dst, f)
	case o.Scales == quant.ScaleFloat32 && r.Plan.Scheme == quant.Float8BlockScaling:
		f, err := format(o.Element)
		if err != nil {
			return err
		}
		if len(o.ScaleInv) != o.ScaleRows*o.ScaleCols {
			return fmt.Errorf("block operand with %d scales, want %d", len(o.ScaleInv), o.ScaleRows*o.ScaleCols)
		}
		sinv, err := upload(cuda.Bytes(o.ScaleInv))
		if err != nil {
			return err
		}
		// Both operands index their scales in stored orientation the same
		// way (quant.Plan.ScaleIndex): (j/128, i) for 1x128 blocks,
		// (i/128, j/128) for 128x128 tiles.
		return b.set.BlockDequantize(c, b.stream, q, o.Rows, o.Cols, sinv, o.ScaleCols, r.Plan.BlockRows == 128, f, dst)
	case o.Scales == quant.ScaleE8M0:
		f, err := format(o.Element)
		if err != nil {
			return err
		}
		sc, err := upload(o.ScaleCodes)
		if err != nil {
			return err
		}
		return b.set.MXFP8Dequantize(c, b.stream, q, o.Rows, o.Cols, sc, u == quant.UsageColumnwise, dst, f)
	case o.Scales == quant.ScaleE4M3:
		if len(o.ScaleCodes) != o.ScaleRows*o.ScaleCols {
			return fmt.Errorf("NVFP4 operand with %d scales, want %d", len(o.ScaleCodes), o.ScaleRows*o.ScaleCols)
		}
		sc, err := upload(o.ScaleCodes)
		if err != nil {
			return err
		}
		// The kernel derives the tensor scale from the operand's amax, as
		// the quantize did.
		am, err := upload(cuda.Bytes([]float32{o.Amax}))
		if err != nil {
			return err
		}
		return b.set.NVFP4Dequantize(c, b.stream, q, o.Rows, o.Cols, sc, o.ScaleCols, am, dst)
	}
	return fmt.Errorf("%v scales of scheme %s: %w", o.Scales, r.Plan.Scheme, ErrNotImplemented)
}
