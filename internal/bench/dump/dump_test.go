// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dump

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/bench/npy"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/internal/quant/workload"
)

func spec(scheme v1alpha1.Scheme, op v1alpha1.Operation, shapes ...v1alpha1.Shape) bench.Spec {
	s := bench.Spec{
		RecipeName: "r", Recipe: v1alpha1.QuantRecipeSpec{Scheme: scheme}, Mode: v1alpha1.JobModeValidation,
		Workload:  v1alpha1.Workload{Operation: op, Shapes: shapes, Seed: 5, InputDType: v1alpha1.DTypeBF16},
		Execution: v1alpha1.ExecutionForLevel(v1alpha1.LevelQuick, v1alpha1.Execution{}),
	}
	if op == v1alpha1.OperationGroupedQuantize {
		s.Workload.Groups = &v1alpha1.Groups{Count: 3, Splits: v1alpha1.SplitUniform}
	}
	return s
}

func run(t *testing.T, s bench.Spec) string {
	t.Helper()
	dir := t.TempDir()
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&bench.Engine{Backend: reference.New(), Observer: w}).Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return dir
}

func read(t *testing.T, path string) *npy.Array {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := npy.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return a
}

func readMeta(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func TestQuantizeDumpPerScheme(t *testing.T) {
	wantScale := map[v1alpha1.Scheme]struct {
		descr    string
		shape    []int
		swizzled bool
	}{
		v1alpha1.SchemeDelayedScaling:       {npy.DescrFloat32, []int{1, 1}, false},
		v1alpha1.SchemeFloat8CurrentScaling: {npy.DescrFloat32, []int{1, 1}, false},
		v1alpha1.SchemeFloat8BlockScaling:   {npy.DescrFloat32, []int{1, 132}, false},
		v1alpha1.SchemeMXFP8BlockScaling:    {npy.DescrUint8, []int{256, 4}, true},
		v1alpha1.SchemeNVFP4BlockScaling:    {npy.DescrUint8, []int{256, 4}, true},
	}
	for _, scheme := range v1alpha1.Schemes {
		t.Run(string(scheme), func(t *testing.T) {
			dir := run(t, spec(scheme, v1alpha1.OperationQuantize, v1alpha1.Shape{Rows: 129, Cols: 17}, v1alpha1.Shape{Rows: 129, Cols: 17}))
			for _, sub := range []string{"129x17", "129x17-1"} {
				d := filepath.Join(dir, sub)
				in := read(t, filepath.Join(d, "input.npy"))
				got, _ := in.Float32s()
				stream := uint32(0)
				if sub != "129x17" {
					stream = 1
				}
				want, _ := workload.Generate(workload.Spec{Seed: 5, DType: workload.BF16, Stream: stream}, 129, 17)
				if diff := cmp.Diff(want.Data, got); diff != "" {
					t.Errorf("%s input (-want +got):\n%s", sub, diff)
				}
				data := read(t, filepath.Join(d, "data.npy"))
				wantCols := 17
				if scheme == v1alpha1.SchemeNVFP4BlockScaling {
					wantCols = 9 // packed
				}
				if diff := cmp.Diff([]int{129, wantCols}, data.Shape); diff != "" || data.Descr != npy.DescrUint8 {
					t.Errorf("data %s shape (-want +got):\n%s", data.Descr, diff)
				}
				ws := wantScale[scheme]
				sc := read(t, filepath.Join(d, "scale_inv.npy"))
				if sc.Descr != ws.descr || !cmp.Equal(ws.shape, sc.Shape) {
					t.Errorf("scale_inv %s %v, want %s %v", sc.Descr, sc.Shape, ws.descr, ws.shape)
				}
				_, err := os.Stat(filepath.Join(d, "scale_inv_swizzled.npy"))
				if (err == nil) != ws.swizzled {
					t.Errorf("scale_inv_swizzled.npy exists: %v", err == nil)
				}
				if _, err := os.Stat(filepath.Join(d, "columnwise_data.npy")); err != nil {
					t.Errorf("no columnwise data: %v", err)
				}
				if deq := read(t, filepath.Join(d, "dequantized.npy")); !cmp.Equal([]int{129, 17}, deq.Shape) {
					t.Errorf("dequantized shape %v", deq.Shape)
				}
				m := readMeta(t, filepath.Join(d, "meta.json"))
				if m["scheme"] != string(scheme) || m["recipeKey"] != (&v1alpha1.QuantRecipeSpec{Scheme: scheme}).Key() || m["tensorRole"] != "Input" {
					t.Errorf("meta %v", m)
				}
				if _, ok := m["scaleRounding"]; ok != (scheme == v1alpha1.SchemeMXFP8BlockScaling) {
					t.Errorf("scaleRounding present: %v", ok)
				}
				if files, _ := m["files"].([]any); len(files) < 6 {
					t.Errorf("meta lists %d files", len(files))
				}
			}
		})
	}
}

func TestGroupedDump(t *testing.T) {
	dir := run(t, spec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationGroupedQuantize, v1alpha1.Shape{Rows: 96, Cols: 40}))
	m := readMeta(t, filepath.Join(dir, "96x40", "meta.json"))
	if diff := cmp.Diff([]any{32.0, 32.0, 32.0}, m["splits"]); diff != "" {
		t.Errorf("splits (-want +got):\n%s", diff)
	}
	for _, g := range []string{"group-0", "group-1", "group-2"} {
		in := read(t, filepath.Join(dir, "96x40", g, "input.npy"))
		if !cmp.Equal([]int{32, 40}, in.Shape) {
			t.Errorf("%s input shape %v", g, in.Shape)
		}
		gm := readMeta(t, filepath.Join(dir, "96x40", g, "meta.json"))
		if gm["name"] != g || gm["tensorRows"] != 32.0 {
			t.Errorf("%s meta %v", g, gm)
		}
	}
}

func TestLinearDump(t *testing.T) {
	s := spec(v1alpha1.SchemeNVFP4BlockScaling, v1alpha1.OperationQuantizedLinear, v1alpha1.Shape{Rows: 32, Cols: 64, OutFeatures: ptr[int64](48)})
	dir := run(t, s)
	d := filepath.Join(dir, "32x64")
	for name, want := range map[string][]int{
		"x/input.npy": {32, 64}, "w/input.npy": {48, 64}, "y.npy": {32, 48}, "y_exact.npy": {32, 48},
		"x/data.npy": {32, 32}, "w/dequantized.npy": {48, 64},
	} {
		if a := read(t, filepath.Join(d, name)); !cmp.Equal(want, a.Shape) {
			t.Errorf("%s shape %v, want %v", name, a.Shape, want)
		}
	}
	if m := readMeta(t, filepath.Join(d, "w", "meta.json")); m["tensorRole"] != "Weight" || m["blockRows"] != 16.0 {
		t.Errorf("weight meta %v", m)
	}
}

func ptr[T any](v T) *T { return &v }

// TestNVFP4OptionsDump: a dump names what 4over6 and row scaling change,
// so that an oracle can check them: the measure and the tensor scale's
// bound, and each row's amax and scale.
func TestNVFP4OptionsDump(t *testing.T) {
	s := spec(v1alpha1.SchemeNVFP4BlockScaling, v1alpha1.OperationQuantize, v1alpha1.Shape{Rows: 32, Cols: 48})
	s.Recipe.NVFP4 = &v1alpha1.NVFP4Options{RandomHadamardTransform: ptr(false), FourOverSix: v1alpha1.NVFP4ScopeAll,
		FourOverSixErrorMode: v1alpha1.FourOverSixMSE, RowScaledActivation: ptr(true)}
	s.RecipeKey = s.Recipe.Key()
	s.Workload.TensorRole, s.Workload.Usage = v1alpha1.TensorRoleInput, v1alpha1.UsageRowwise
	d := filepath.Join(run(t, s), "32x48")
	m := readMeta(t, filepath.Join(d, "meta.json"))
	if m["fourOverSix"] != "MSE" || m["tensorScaleBound"] != 256.0 || m["rowScaled"] != true {
		t.Errorf("meta fourOverSix %v tensorScaleBound %v rowScaled %v", m["fourOverSix"], m["tensorScaleBound"], m["rowScaled"])
	}
	if _, ok := m["tensorScale"]; ok {
		t.Error("a row-scaled operand has a single tensorScale in meta.json")
	}
	for _, name := range []string{"row_amax.npy", "row_scale.npy"} {
		if a := read(t, filepath.Join(d, name)); a.Descr != npy.DescrFloat32 || !cmp.Equal([]int{32}, a.Shape) {
			t.Errorf("%s: %s %v, want float32 [32]", name, a.Descr, a.Shape)
		}
	}
	files, _ := m["files"].([]any)
	named := map[string]bool{}
	for _, f := range files {
		if f, ok := f.(map[string]any); ok {
			named[f["name"].(string)] = true
		}
	}
	if !named["row_amax.npy"] || !named["row_scale.npy"] {
		t.Errorf("meta.json files %v do not name the row files", named)
	}
}
