// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpu

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// GPU tests of the CUDA backend against the reference backend: every result
// must be byte-identical (quant.SameBytes, the contract between the two).
// Build with
//
//	CGO_ENABLED=1 go test -c -tags gpu -o .gpubin/gpu.test ./internal/gpu
//
// and run the binary on a GPU machine. KQUANT_BIG=0 skips the largest
// shapes; KQUANT_PTX_DIR may point at freshly generated PTX.

var (
	gb  *Backend
	ref = reference.New()
)

func TestMain(m *testing.M) {
	var err error
	gb, err = New(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "cuda backend GPU tests:", err)
		os.Exit(1)
	}
	info := gb.Device().Info()
	fmt.Printf("device: %s, CC %s, %d SMs, driver CUDA %s\n", info.Name, info.ComputeCapability(), info.SMs, gb.Device().Driver().VersionString())
	code := m.Run()
	if err := gb.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing:", err)
	}
	os.Exit(code)
}

type shape struct{ rows, cols int }

func (s shape) String() string { return fmt.Sprintf("%dx%d", s.rows, s.cols) }

// The shapes, aligned and not.
var smallShapes = []shape{{1, 1}, {1, 33}, {129, 17}, {7, 4096}, {31, 257}, {33, 1000}, {4097, 65}, {65, 40}, {300, 200}, {1000, 1000}, {64, 64}, {48, 24}, {80, 200}, {16, 8}}

func bigShapes() []shape {
	if os.Getenv("KQUANT_BIG") == "0" {
		return nil
	}
	return []shape{{4096, 4096}, {16384, 8192}}
}

var dtypes = []kernels.DType{kernels.BF16, kernels.F16, kernels.F32}

// parallel runs fn over [0, n) in chunks on all CPUs.
func parallel(n int, fn func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	chunk := max((n+w-1)/w, 1<<14)
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}

// specials32 are NaN, inf, the largest float32, a huge value, subnormals,
// zero, 464 (beyond E4M3's max) and 2^-10 (an E4M3 subnormal).
var specials32 = []uint32{0x7FC00000, 0x7F800000, 0x7F7FFFFF, 0x7E967699, 0x00000001, 0x007FFFFF, 0, 0x43E80000, 0x3A800000}

// round rounds v to the input type, as a framework holding the tensor in
// that type would.
func round(v float32, dt kernels.DType) float32 {
	switch dt {
	case kernels.BF16:
		return element.BF16ToFloat32(element.Float32ToBF16(v))
	case kernels.F16:
		return element.FP16ToFloat32(element.Float32ToFP16(v))
	}
	return v
}

// makeInput draws values over a wide dynamic range (a normal variate
// times 2^-24 .. 2^20), held exactly in dt; with specials about 1% of them
// become NaN, +-inf, huge values, subnormals or signed zeros.
func makeInput(sh shape, dt kernels.DType, specials bool, seed uint64) quant.Tensor {
	x := quant.NewTensor(sh.rows, sh.cols)
	const chunk = 1 << 16
	n := len(x.Data)
	parallel((n+chunk-1)/chunk, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			rng := rand.New(rand.NewPCG(seed, uint64(ch)))
			for i := ch * chunk; i < min(n, (ch+1)*chunk); i++ {
				v := float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(45)-24))
				if ch%4 == 3 {
					v = heavyTailed(rng, i)
				}
				if specials && rng.IntN(100) == 0 {
					v = math.Float32frombits(specials32[rng.IntN(len(specials32))])
					if rng.IntN(2) == 1 {
						v = -v
					}
				}
				x.Data[i] = round(v, dt)
			}
		}
	})
	return x
}

// diff describes how two results differ (empty when SameBytes).
func diff(got, want *quant.Result) string {
	if quant.SameBytes(got, want) {
		return ""
	}
	if got == nil || want == nil {
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	s := ""
	if math.Float32bits(got.Amax) != math.Float32bits(want.Amax) || got.Rows != want.Rows || got.Cols != want.Cols {
		s += fmt.Sprintf(" result [%d,%d] amax %g, want [%d,%d] amax %g;", got.Rows, got.Cols, got.Amax, want.Rows, want.Cols, want.Amax)
	}
	for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
		g, w := got.Operand(u), want.Operand(u)
		name := map[quant.Usage]string{quant.UsageRowwise: "rowwise", quant.UsageColumnwise: "columnwise"}[u]
		if (g == nil) != (w == nil) {
			s += fmt.Sprintf(" %s present %v, want %v;", name, g != nil, w != nil)
			continue
		}
		if g == nil {
			continue
		}
		if g.Rows != w.Rows || g.Cols != w.Cols || g.Transposed != w.Transposed || g.Element != w.Element || g.ScaleRows != w.ScaleRows || g.ScaleCols != w.ScaleCols {
			s += fmt.Sprintf(" %s shape/type differ: %+v vs %+v;", name,
				[]any{g.Rows, g.Cols, g.Transposed, g.Element, g.ScaleRows, g.ScaleCols}, []any{w.Rows, w.Cols, w.Transposed, w.Element, w.ScaleRows, w.ScaleCols})
			continue
		}
		if math.Float32bits(g.Scale) != math.Float32bits(w.Scale) || math.Float32bits(g.Amax) != math.Float32bits(w.Amax) {
			s += fmt.Sprintf(" %s scale %g amax %g, want %g, %g;", name, g.Scale, g.Amax, w.Scale, w.Amax)
		}
		for k := range g.ScaleInv {
			if k < len(w.ScaleInv) && math.Float32bits(g.ScaleInv[k]) != math.Float32bits(w.ScaleInv[k]) {
				s += fmt.Sprintf(" %s scale_inv[%d] %g, want %g;", name, k, g.ScaleInv[k], w.ScaleInv[k])
				break
			}
		}
		s += bytesDiff(name+" data", g.Data, w.Data)
		s += bytesDiff(name+" scales", g.ScaleCodes, w.ScaleCodes)
		s += bytesDiff(name+" swizzled", g.Swizzled, w.Swizzled)
	}
	return s
}

func bytesDiff(what string, got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	if len(got) != len(want) {
		return fmt.Sprintf(" %s: %d bytes, want %d;", what, len(got), len(want))
	}
	n, first := 0, -1
	for i := range got {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return fmt.Sprintf(" %s: %d of %d bytes differ, first [%d] %#02x want %#02x;", what, n, len(got), first, got[first], want[first])
}

// counter counts bit-exact cases for the closing log line.
type counter struct {
	mu           sync.Mutex
	exact, total int
}

func (c *counter) add(ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	if ok {
		c.exact++
	}
}

type fp8Case struct {
	sh       shape
	dt       kernels.DType
	role     quant.TensorRole // Input: E4M3; Gradient: E5M2 under HYBRID
	specials bool
}

func (c fp8Case) String() string {
	return fmt.Sprintf("%v/%v/%s/specials=%v", c.sh, c.dt, c.role, c.specials)
}

func fp8Cases() []fp8Case {
	var out []fp8Case
	for _, sh := range smallShapes {
		for _, dt := range dtypes {
			for _, role := range []quant.TensorRole{quant.Input, quant.Gradient} {
				for _, sp := range []bool{false, true} {
					out = append(out, fp8Case{sh, dt, role, sp})
				}
			}
		}
	}
	for _, sh := range bigShapes() {
		for _, sp := range []bool{false, true} {
			out = append(out, fp8Case{sh, kernels.BF16, quant.Input, sp})
		}
	}
	return out
}

var usages = []quant.Usage{quant.UsageBoth, quant.UsageRowwise, quant.UsageColumnwise}

// checkDequantize compares the backend's dequantize of every operand with
// the reference's (NaN equal to NaN).
func checkDequantize(t *testing.T, res *quant.Result) {
	t.Helper()
	ctx := context.Background()
	for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
		if res.Operand(u) == nil {
			continue
		}
		got, err := gb.Dequantize(ctx, res, u)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Dequantize(ctx, res, u)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Data {
			g, w := got.Data[i], want.Data[i]
			if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
				t.Errorf("dequantize usage %d [%d]: got %g, want %g", u, i, g, w)
				break
			}
		}
	}
}

func TestCurrentScaling(t *testing.T) {
	ctx := context.Background()
	var cnt counter
	for i, cs := range fp8Cases() {
		r := quant.DefaultRecipe(quant.Float8CurrentScaling)
		r.Current.Power2Scales = i%3 == 1
		if i%5 == 2 {
			r.Current.AmaxEpsilon = 1e-3
		}
		x := makeInput(cs.sh, cs.dt, cs.specials, uint64(i+1))
		for _, u := range usages {
			if cs.sh.rows*cs.sh.cols > 1<<24 && u != quant.UsageBoth {
				continue
			}
			t.Run(fmt.Sprintf("%v/usage=%d/pow2=%v/eps=%g", cs, u, r.Current.Power2Scales, r.Current.AmaxEpsilon), func(t *testing.T) {
				req := quant.Request{Recipe: r, Role: cs.role, Usage: u}
				got, err := gb.Quantize(ctx, req, x)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Quantize(ctx, req, x)
				if err != nil {
					t.Fatal(err)
				}
				d := diff(got, want)
				cnt.add(d == "")
				if d != "" {
					t.Errorf("not bit-exact:%s", d)
				}
				if u == quant.UsageBoth && cs.sh.rows*cs.sh.cols <= 1<<20 {
					checkDequantize(t, got)
				}
			})
		}
	}
	t.Logf("current scaling: %d of %d cases bit-exact with the reference (codes, scale, scale_inv, amax)", cnt.exact, cnt.total)
}

// TestDelayedScaling runs 5 steps per case twice: through Quantize (state
// on the host, updated with State.Update) and as a device-resident step
// ending with the update kernel; after each step the results and both
// states must equal the reference's.
func TestDelayedScaling(t *testing.T) {
	ctx := context.Background()
	type variant struct {
		histLen    int
		margin     int
		mostRecent bool
	}
	variants := []variant{{1024, 0, false}, {3, 0, false}, {1, 1, false}, {16, 2, true}, {2000, 0, false}}
	var cnt counter
	cases := fp8Cases()
	for i, cs := range cases {
		if cs.sh.rows*cs.sh.cols > 1<<24 && cs.specials {
			continue
		}
		v := variants[i%len(variants)]
		r := quant.DefaultRecipe(quant.DelayedScaling)
		r.Delayed = quant.DelayedOptions{Margin: v.margin, AmaxHistoryLen: v.histLen, AmaxComputeAlgo: quant.AmaxComputeMax}
		if v.mostRecent {
			r.Delayed.AmaxComputeAlgo = quant.AmaxComputeMostRecent
		}
		u := usages[i%len(usages)]
		t.Run(fmt.Sprintf("%v/usage=%d/%+v", cs, u, v), func(t *testing.T) {
			stRef, stGPU, stDev := quant.NewState(r), quant.NewState(r), quant.NewState(r)
			s, err := gb.NewStep(ctx, Config{Request: quant.Request{Recipe: r, Role: cs.role, Usage: u}, Rows: cs.sh.rows, Cols: cs.sh.cols, Input: cs.dt, EndStep: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.SetState(ctx, 0, stDev); err != nil {
				t.Fatal(err)
			}
			ok := true
			for step := range 5 {
				// Step 3 is all zeros: an amax of 0 leaves the state alone.
				x := makeInput(cs.sh, cs.dt, cs.specials && step%2 == 1, uint64(100*i+step))
				if step == 3 {
					x = quant.NewTensor(cs.sh.rows, cs.sh.cols)
				}
				want, err := ref.Quantize(ctx, quant.Request{Recipe: r, Role: cs.role, Usage: u, State: stRef}, x)
				if err != nil {
					t.Fatal(err)
				}
				got, err := gb.Quantize(ctx, quant.Request{Recipe: r, Role: cs.role, Usage: u, State: stGPU}, x)
				if err != nil {
					t.Fatal(err)
				}
				if d := diff(got, want); d != "" {
					t.Errorf("step %d: not bit-exact:%s", step, d)
					ok = false
				}
				if math.Float32bits(stGPU.AmaxHistory[0]) != math.Float32bits(stRef.AmaxHistory[0]) {
					t.Errorf("step %d: recorded amax %g, want %g", step, stGPU.AmaxHistory[0], stRef.AmaxHistory[0])
					ok = false
				}
				for _, st := range []*quant.State{stRef, stGPU} {
					if err := st.Update(r, cs.role); err != nil {
						t.Fatal(err)
					}
				}
				// The device-resident step: cast and update kernels.
				if err := s.SetInput(ctx, 0, x); err != nil {
					t.Fatal(err)
				}
				if err := s.Run(ctx, false); err != nil {
					t.Fatal(err)
				}
				if err := s.State(ctx, 0, stDev); err != nil {
					t.Fatal(err)
				}
				if !sameState(stDev, stRef) {
					t.Errorf("step %d: device state scale %g history[:4] %v, want %g %v", step, stDev.Scale, head(stDev.AmaxHistory), stRef.Scale, head(stRef.AmaxHistory))
					ok = false
				}
				if step == 0 && cs.sh.rows*cs.sh.cols <= 1<<20 {
					checkDequantize(t, got)
				}
			}
			cnt.add(ok)
		})
	}
	t.Logf("delayed scaling: %d of %d cases bit-exact over 5 steps (codes, scales, amax; host and device state after each step)", cnt.exact, cnt.total)
}

func head(h []float32) []float32 { return h[:min(4, len(h))] }

func sameState(a, b *quant.State) bool {
	if math.Float32bits(a.Scale) != math.Float32bits(b.Scale) || len(a.AmaxHistory) != len(b.AmaxHistory) {
		return false
	}
	for k := range a.AmaxHistory {
		if math.Float32bits(a.AmaxHistory[k]) != math.Float32bits(b.AmaxHistory[k]) {
			return false
		}
	}
	return true
}

func TestMXFP8(t *testing.T) {
	ctx := context.Background()
	var cnt counter
	for i, cs := range fp8Cases() {
		x := makeInput(cs.sh, cs.dt, cs.specials, uint64(7000+i))
		for _, rounding := range []quant.ScaleRounding{quant.ScaleRoundingTE, quant.ScaleRoundingOCP} {
			for _, u := range usages {
				if cs.sh.rows*cs.sh.cols > 1<<24 && u != quant.UsageBoth {
					continue
				}
				r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
				r.Format = quant.FormatHybrid
				r.MXFP8.ScaleRounding = rounding
				t.Run(fmt.Sprintf("%v/%s/usage=%d", cs, rounding, u), func(t *testing.T) {
					req := quant.Request{Recipe: r, Role: cs.role, Usage: u}
					got, err := gb.Quantize(ctx, req, x)
					if err != nil {
						t.Fatal(err)
					}
					want, err := ref.Quantize(ctx, req, x)
					if err != nil {
						t.Fatal(err)
					}
					d := diff(got, want)
					cnt.add(d == "")
					if d != "" {
						t.Errorf("not bit-exact:%s", d)
					}
					if u == quant.UsageBoth && cs.sh.rows*cs.sh.cols <= 1<<20 {
						checkDequantize(t, got)
					}
				})
			}
		}
	}
	t.Logf("MXFP8: %d of %d cases bit-exact with the reference (codes, E8M0 scales, swizzled scales, amax)", cnt.exact, cnt.total)
}

func TestGrouped(t *testing.T) {
	ctx := context.Background()
	x := makeInput(shape{256, 96}, kernels.BF16, true, 99)
	splits := []int{64, 0, 32, 160}
	for _, s := range []quant.Scheme{quant.Float8CurrentScaling, quant.DelayedScaling, quant.MXFP8BlockScaling} {
		t.Run(string(s), func(t *testing.T) {
			r := quant.DefaultRecipe(s)
			var stG, stR []*quant.State
			if s == quant.DelayedScaling {
				for range splits {
					stG, stR = append(stG, quant.NewState(r)), append(stR, quant.NewState(r))
				}
			}
			req := quant.Request{Recipe: r, Role: quant.Input}
			got, err := gb.QuantizeGrouped(ctx, req, x, splits, stG)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.QuantizeGrouped(ctx, req, x, splits, stR)
			if err != nil {
				t.Fatal(err)
			}
			for g := range want {
				if d := diff(got[g], want[g]); d != "" {
					t.Errorf("group %d: %s", g, d)
				}
			}
		})
	}
}

// TestGraphReplay captures one step of each recipe once and replays it on
// 3 inputs copied into the same input buffer; each replay's result must
// equal an eager run's and the reference's. The delayed-scaling step ends
// with the device update, and its 3 replays chain: each replay's outputs
// and state must equal the eager chain's.
func TestGraphReplay(t *testing.T) {
	ctx := context.Background()
	sh := shape{1024, 768}
	recipes := map[string]quant.Recipe{
		"current": quant.DefaultRecipe(quant.Float8CurrentScaling),
		"delayed": quant.DefaultRecipe(quant.DelayedScaling),
		"mxfp8":   quant.DefaultRecipe(quant.MXFP8BlockScaling),
	}
	inputs := make([]quant.Tensor, 3)
	for k := range inputs {
		inputs[k] = makeInput(sh, kernels.BF16, k == 1, uint64(500+k))
	}
	for name, r := range recipes {
		t.Run(name, func(t *testing.T) {
			delayed := r.Scheme == quant.DelayedScaling
			cfg := Config{Request: quant.Request{Recipe: r, Role: quant.Input}, Rows: sh.rows, Cols: sh.cols, Input: kernels.BF16, EndStep: delayed}
			eager, err := gb.NewStep(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer eager.Close()
			graph, err := gb.NewStep(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer graph.Close()
			stRef := quant.NewState(r)
			for k, x := range inputs {
				var snaps [2][]byte
				for j, s := range []*Step{eager, graph} {
					if err := s.SetInput(ctx, 0, x); err != nil {
						t.Fatal(err)
					}
					if err := s.Run(ctx, j == 1); err != nil {
						t.Fatal(err)
					}
					if snaps[j], err = s.Snapshot(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(snaps[0], snaps[1]) {
					t.Errorf("replay %d: %s", k, bytesDiff("outputs", snaps[1], snaps[0]))
					continue
				}
				if delayed {
					if _, err := ref.Quantize(ctx, quant.Request{Recipe: r, Role: quant.Input, State: stRef}, x); err != nil {
						t.Fatal(err)
					}
					if err := stRef.Update(r, quant.Input); err != nil {
						t.Fatal(err)
					}
					st := quant.NewState(r)
					if err := graph.State(ctx, 0, st); err != nil {
						t.Fatal(err)
					}
					if !sameState(st, stRef) {
						t.Errorf("replay %d: state scale %g, want %g", k, st.Scale, stRef.Scale)
						continue
					}
				} else {
					got, err := graph.Result(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					want, err := ref.Quantize(ctx, quant.Request{Recipe: r, Role: quant.Input}, x)
					if err != nil {
						t.Fatal(err)
					}
					if d := diff(got, want); d != "" {
						t.Errorf("replay %d vs reference: %s", k, d)
						continue
					}
				}
				t.Logf("replay %d: %d output bytes (%d kernels) equal to the eager run and the reference", k, len(snaps[1]), graph.Kernels())
			}
		})
	}
}

// heavyTailed draws element i of a heavy-tailed chunk (every fourth chunk
// of an input): Cauchy values, a normal over the absolute value of another,
// whose runs of 16 cancel and round in the ways that expose a summation
// order (the RHT) where the wide-range normal draws do not; one block of 32
// in 8 is scaled by 2^-118 (held by F32 and BF16 inputs), where an MXFP8
// block's t is a float32 subnormal and the E8M0 rule's subnormal case sets
// the scale.
func heavyTailed(rng *rand.Rand, i int) float32 {
	z := rng.NormFloat64() / math.Abs(rng.NormFloat64())
	if (i/32)%8 == 5 {
		z = math.Ldexp(z, -118)
	}
	return float32(z)
}
